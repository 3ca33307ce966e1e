"""What-if knob sets replayed in lockstep by one replayer, for as long as their builders' states are the same.

A what-if builder's state (Layer C, its turns and running sums) does not depend on its knobs until it
makes a compaction of its own: forget, masking, the soft-cap plan and the hard-cap check are applied when
a context is built (docs/context.md). So every what-if knob set of a pass (`replay_many(figures_only=True)`)
starts in one `LockstepReplayer`, fed each event once; at each agent call it builds once and renders the
build under each member's knobs from the same state (`splice.rerender`, what `build(knobs=...)` gives),
members whose forget cut, masked end and hard-cap side agree (and whose stream's previous sent call had
the same shape) sharing one rendering and one prefix-reuse figure (its break, if any, not named: the rows
are read for their figures only; with `reuse_chars` False, whether there is a break and nothing else: no
cache model reads the reused bytes). A member parts (`diverging`: it is
forked off, `Replayer.fork`) just before the first build that would compact under its knobs, or a failed
step's build whose figures differ between members; it joins the others again once both are idle
(`Replayer.idle_before`: between runs, every step dropped)."""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.rendered import RenderedContext, Shape
from zymi_tui.context.reuse import PrefixReuse, breaks_same_head, head_figures, prefix_reuse
from zymi_tui.context.splice import Ends, Rendering, bounds, figures_as, layer_c_bytes, rerender
from zymi_tui.events.kinds import LlmCallStarted, WorkflowNodeCompleted
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK
from zymi_tui.replay.call_builds import StepState
from zymi_tui.replay.call_context import CallContext, ClassCall
from zymi_tui.replay.calls import Replayer

# members, their context (the row's own) or its figures (`splice.figures_as`), their prefix reuse (or,
# its figures not counted, whether it breaks: `reuse_chars`)
_Class = tuple[list[int], RenderedContext | Rendering, PrefixReuse | bool]
PRUNE_SLACK = 64  # streams whose previous shapes are kept past their step's end before they are pruned


def same_head(prev: Shape, cur: Shape) -> bool:
    """Whether two calls' Layer A and memory are the same (the same prefix object: one per step run), so
    that the prefix reuse counts all of it (`prefix_reuse(same_head=)`); False only means: compare them."""
    return prev.prefix is cur.prefix and prev.memory == cur.memory


class LockstepReplayer(Replayer):
    """A what-if replayer that also renders each call under its other `members`' knobs (index -> knobs;
    the replayer's own knobs are one member's). Rows are delivered per member (`deliver`)."""

    members: dict[int, ContextKnobs]
    _prev: dict[str, dict[int, Shape]]  # per step stream, per member: its previous sent agent call's shape
    _variants: dict[int, tuple[CallContext, list[_Class]]]  # id of a row waiting in the queue: its renderings
    _figured: tuple[ReplayEvent, RenderedContext, dict[int, tuple[int, int, int]]] | None
    reuse_chars: bool  # the prefix reuse counted (a cache model prices it), else only whether it breaks

    @classmethod
    def of(cls, replayer: Replayer, members: dict[int, ContextKnobs], *, reuse_chars: bool = True) -> LockstepReplayer:
        """`replayer` (a what-if one, fed nothing yet) running `members`."""
        assert replayer.whatif and not replayer.steps and not replayer.queue
        other = cls.__new__(cls)
        other.__dict__.update(replayer.__dict__)
        other.track_reuse = False  # the prefix reuse is figured per member here
        other.members, other._prev, other._variants, other._figured = dict(members), {}, {}, None
        other.reuse_chars = reuse_chars
        return other

    def fork(self, knobs: ContextKnobs, *, lockstep: bool = False) -> Replayer:
        other = super().fork(knobs, lockstep=lockstep)
        assert isinstance(other, LockstepReplayer)
        other._prev = {stream: dict(shapes) for stream, shapes in self._prev.items()}
        other._variants = dict(self._variants)
        other._figured = None
        return other

    def part(self, members: list[int]) -> LockstepReplayer:
        """A fork running `members` (taken from this one's), from the state before the event about to be fed."""
        knobs = {i: self.members.pop(i) for i in members}
        fork = self.fork(knobs[members[0]], lockstep=True)
        assert isinstance(fork, LockstepReplayer)
        fork.members = knobs
        fork.queue = deque(self.queue)  # the rows not out yet: this fork delivers them to its members too
        return fork

    def join(self, other: LockstepReplayer) -> None:
        """Take `other`'s members (both idle: nothing of either depends on its knobs)."""
        self.members.update(other.members)

    # -- the members' renderings ---------------------------------------------------------------
    def _bounds(self, ctx: RenderedContext) -> dict[int, tuple[int, int, int]]:
        """Per member: the forget cut, the masked end and the total of `ctx`'s build under its knobs."""
        shape = ctx.shape
        assert shape is not None
        tail, n = shape.tail, shape.n
        n_turns = bisect.bisect_left(tail.turn_starts, n)
        turn_ends = tail.turn_ends
        # `ctx` was built just now: its tail holds its n items and n_turns turns, none ending past n, so
        # its turn ends are the build's as they are (what `Ends` gives, read with no wrapper per index)
        ends: Sequence[int] = turn_ends
        if len(turn_ends) != n_turns or (n_turns and turn_ends[n_turns - 1] > n):
            ends = Ends(turn_ends, n_turns, n)
        ab = ctx.layer_bytes["A"] + ctx.layer_bytes["B"]
        masked, full = tail.cum_masked, tail.cum_full
        out = {}
        by_knobs: dict[tuple[int | None, int], tuple[int, int, int]] = {}  # (`bounds` reads these two knobs)
        for i, k in self.members.items():
            key = (k.forget_after_turns, k.observation_window)
            figures = by_knobs.get(key)
            if figures is None:
                _, cut, mask_end = bounds(k, n_turns, ends)
                chars = ab + layer_c_bytes(masked[cut], masked[mask_end], full[mask_end], full[n])
                figures = by_knobs[key] = (cut, mask_end, chars)
            out[i] = figures
        return out

    def _compacting(self, ctx: RenderedContext, figures: dict[int, tuple[int, int, int]]) -> list[int]:
        """The members whose build of `ctx`'s state makes a compaction (over their soft cap, and a plan)."""
        out = []
        for i, k in self.members.items():
            if figures[i][2] > k.soft_cap_chars:
                again = rerender(ctx, k)
                if again is not None and again.compaction is not None:
                    out.append(i)
        return out

    def diverging(self, se: ReplayEvent) -> list[list[int]]:
        """The members that must part before `se` is fed, in parts (each part a fork of its own; the part
        holding this replayer's own knobs stays here): each member whose build at `se` compacts, alone;
        at a failed step's build, the members by its figures. [] when they all go on together."""
        if self.next_build_chars(se) is None:  # (it leaves an agent call's build for `feed`: `_peeked`)
            return []
        peeked = self._peeked
        if peeked is not None and peeked[0] is se:  # an agent call
            ctx = peeked[1]
            figures = self._bounds(ctx)
            self._figured = (se, ctx, figures)
            compacting = self._compacting(ctx, figures)
            if not compacting:
                return []
            rest = [i for i in self.members if i not in compacting]
            return self._parts([rest, *([i] for i in compacting)])
        kind = se.kind  # a failed step's build
        assert isinstance(kind, WorkflowNodeCompleted)
        st = self.steps[f"{se.stream_id}{STEP_MARK}{kind.node_id}"]
        ctx = st.builder.build(self._memory(st))
        by: dict[object, list[int]] = {}
        for i, k in self.members.items():
            again = rerender(ctx, k)
            assert again is not None
            key = (again.chars, again.message_count, again.hard_cap_exceeded, i if again.compaction else None)
            by.setdefault(key, []).append(i)
        return self._parts(list(by.values())) if len(by) > 1 else []

    def _parts(self, parts: list[list[int]]) -> list[list[int]]:
        """`parts` less the one holding this replayer's own knobs (and any empty one)."""
        own = next(i for i, k in self.members.items() if k == self.knobs)
        return [p for p in parts if p and own not in p]

    def _on_call(self, se: ReplayEvent, st: StepState, kind: LlmCallStarted) -> None:
        figured, self._figured = self._figured, None
        before = len(self.queue)
        super()._on_call(se, st, kind)
        if len(self.queue) == before:  # a recorded compaction call: a what-if makes its own
            return
        row = self.queue[-1]
        ctx = row.rendered
        assert not row.is_compaction and ctx is not None and ctx.compaction is None and ctx.shape is not None
        figures = figured[2] if figured is not None and figured[1] is ctx else self._bounds(ctx)
        prev = self._prev.get(se.stream_id)
        if prev is None:
            if len(self._prev) > len(self.steps) + PRUNE_SLACK:  # the shapes of streams no longer replayed
                self._prev = {s: shapes for s, shapes in self._prev.items() if s in self.steps}
            prev = self._prev[se.stream_id] = {}
        classes: dict[tuple[int, int, bool, int], list[int]] = {}
        shape_of = prev.get
        for i, k in self.members.items():  # (the figures may hold members parted since they were made)
            cut, mask_end, chars = figures[i]
            key = (cut, mask_end, chars > k.hard_cap_chars, id(shape_of(i)))
            same = classes.get(key)
            if same is None:
                classes[key] = [i]
            else:
                same.append(i)
        own = (ctx.forgotten, ctx.shape.mask_end, ctx.hard_cap_exceeded)
        ab = ctx.layer_bytes["A"] + ctx.layer_bytes["B"]
        out: list[_Class] = []
        head: tuple[int, int] | None = None  # Layer A and B's figures, the same in every class
        for (cut, mask_end, over, _), members in classes.items():
            first = members[0]
            made: RenderedContext | Rendering = ctx
            if (cut, mask_end, over) != own:  # the same build under this class's knobs, its figures only
                made = figures_as(ctx, self.members[first], cut, mask_end, figures[first][2] - ab)
            assert made.shape is not None  # (no plan: a member that compacts has parted)
            before_shape = shape_of(first)
            reuse: PrefixReuse | bool
            if before_shape is None:
                reuse = PrefixReuse(0, 0, None) if self.reuse_chars else False
            elif not self.reuse_chars:
                reuse = (
                    breaks_same_head(before_shape, made.shape)
                    if same_head(before_shape, made.shape)
                    else prefix_reuse(before_shape, made.shape, named=False).broken is not None
                )
            elif same_head(before_shape, made.shape):
                head = head_figures(made.shape) if head is None else head
                reuse = prefix_reuse(before_shape, made.shape, head, named=False)
            else:
                reuse = prefix_reuse(before_shape, made.shape, named=False)
            if not made.hard_cap_exceeded:
                for i in members:
                    prev[i] = made.shape
            if made is ctx and row.reuse is None and isinstance(reuse, PrefixReuse):
                row.reuse = reuse
            out.append((members, made, reuse))
        self._variants[id(row)] = (row, out)

    def deliver(self, row: CallContext) -> Iterator[tuple[list[int], CallContext | ClassCall]]:
        """`row` as each member sees it: (members, the row, or its figures under their knobs); the members
        are this replayer's now."""
        held = self._variants.pop(id(row), None)
        if held is None or held[0] is not row:
            yield sorted(self.members), row
            return
        for members, ctx, reuse in held[1]:
            mine = [i for i in members if i in self.members]
            if not mine:
                continue
            if ctx is row.rendered and reuse is row.reuse:
                yield mine, row
            else:
                yield mine, ClassCall(row, ctx, reuse)


@dataclass
class LockstepGroup:
    """Every what-if knob set of a pass whose replay has not parted from the others' (see the module)."""

    replayer: LockstepReplayer

    @property
    def members(self) -> list[int]:
        return sorted(self.replayer.members)

    def split_before(self, se: ReplayEvent, _replayers: Sequence[Replayer]) -> list[LockstepGroup]:
        if len(self.replayer.members) < 2:
            return []
        return [LockstepGroup(self.replayer.part(p)) for p in self.replayer.diverging(se)]

    def rows(
        self, rows: list[CallContext], wanted: set[str] | None
    ) -> Iterator[tuple[list[int], CallContext | ClassCall]]:
        """Each of `rows` wanted, once per class of members that see it alike."""
        for row in rows:
            if wanted is None or row.stream_id in wanted:
                yield from self.replayer.deliver(row)


def lockstep_group(replayers: Sequence[Replayer], whatifs: list[int], *, reuse_chars: bool = True) -> LockstepGroup:
    """One group running the what-if replayers `whatifs` (indices of `replayers`), in the first one."""
    members = {i: replayers[i].knobs for i in whatifs}
    return LockstepGroup(LockstepReplayer.of(replayers[whatifs[0]], members, reuse_chars=reuse_chars))


def rejoined(groups: list[LockstepGroup], se: ReplayEvent) -> list[LockstepGroup]:
    """`groups` with those idle before `se` joined into the first of them."""
    first: LockstepGroup | None = None
    out = []
    for group in groups:
        if group.replayer.idle_before(se):
            if first is not None:
                first.replayer.join(group.replayer)
                continue
            first = group
        out.append(group)
    return out
