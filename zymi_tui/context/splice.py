"""Rendering a build's frame into a context, and a context spliced or re-rendered under other knobs.

A what-if re-renders recorded calls without a new builder: `rerender` applies other knobs to a call's
kept frame, `spliced_context` renders a call whose Layer C is pieces of other calls' (`Segment`)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.layer_c import TOOL, Tail, read_back
from zymi_tui.context.masking import (
    memory_block,
    message_bytes,
)
from zymi_tui.context.rendered import CompactionPlan, ContextEntry, Prefix, RenderedContext, Shape
from zymi_tui.events.messages import (
    MessageModel,
    SystemMessage,
    UserMessage,
)


@dataclass(slots=True)
class Frame:
    """What a build renders: Layer A, and Layer C as the first `n` items of `tail` (its first `n_turns`
    turns; `ends[t]` is where turn t ends, the last one as it was then: see `Ends`). Made for every
    build, and for every call of a what-if on each edit: not frozen (a frozen dataclass sets each
    field through `object.__setattr__`, several times slower)."""

    prefix: Prefix
    a_bytes: int
    a_count: int
    tail: Tail
    n: int
    n_turns: int
    ends: Sequence[int]
    compacted_away: int
    compactions: tuple[tuple[int, int], ...]


class Ends(Sequence[int]):
    """A tail's turn ends as they were when it held `n` items: the turns are those started before
    item n, and the last of them ended at min(its end now, n) (a turn only grows by the items
    appended right after it, until a message that is not its tool result closes it for good)."""

    def __init__(self, ends: Sequence[int], n_turns: int, n: int) -> None:
        self._ends, self._n_turns = ends, n_turns
        self._last = min(ends[n_turns - 1], n) if n_turns else 0

    def __len__(self) -> int:
        return self._n_turns

    def __getitem__(self, t: Any) -> Any:
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(self._n_turns))]
        if t < 0:
            t += self._n_turns
        if not 0 <= t < self._n_turns:
            raise IndexError(t)
        return self._last if t == self._n_turns - 1 else self._ends[t]


class Splice(Sequence[int]):
    """Layer C of a what-if builder that follows a base builder (`ContextBuilder.follow`) at a later
    call, without appending anything: the tail its last compaction left (`head`: its first `m` items
    and their turns) and then the base tail's items from `start` on, which it appends as they come
    (the same items, in the same turns). A build's figures come from the two tails' running sums and
    turn ends (`figures`, O(log n)); the tail itself (`head`, which goes on growing) is needed only
    for the messages. Before any compaction `head` is empty and `start` 0. As a sequence: the turn
    ends of the build being figured (see `Ends`)."""

    __slots__ = ("_n", "_n_turns", "base", "ff", "fm", "head", "m", "off", "start", "start_turn", "turns")

    def __init__(self, head: Tail, base: Tail, start: int) -> None:
        self.head, self.base, self.start = head, base, start
        self.m, self.turns = len(head.items), len(head.turn_starts)
        self.start_turn = bisect.bisect_left(base.turn_starts, start)
        self.off = self.m - start
        self.fm = head.cum_masked[self.m] - base.cum_masked[start]
        self.ff = head.cum_full[self.m] - base.cum_full[start]
        self._n = self._n_turns = 0

    def __len__(self) -> int:
        return self._n_turns

    def __getitem__(self, t: Any) -> Any:
        if t < self.turns:
            return self.head.turn_ends[t]
        end = self.base.turn_ends[t - self.turns + self.start_turn] + self.off
        return min(end, self._n) if t == self._n_turns - 1 else end

    def figures(self, n_base: int, k: ContextKnobs) -> tuple[int, int, int, int, int]:
        """A build when the base tail held `n_base` items: (n, n_turns, forget cut, masked end, Layer C
        bytes), as `render_frame` finds them on the spliced tail (the running sums read inline: this is
        done for every call of a stream on every edit)."""
        off, m = self.off, self.m
        n = self._n = n_base + off
        n_turns = self._n_turns = self.turns + bisect.bisect_left(self.base.turn_starts, n_base) - self.start_turn
        _, cut, mask_end = bounds(k, n_turns, self)
        head, base = self.head, self.base
        full_n = head.cum_full[n] if n <= m else base.cum_full[n_base] + self.ff
        if mask_end <= m:
            full_end, masked_end = head.cum_full[mask_end], head.cum_masked[mask_end]
        else:
            full_end, masked_end = base.cum_full[mask_end - off] + self.ff, base.cum_masked[mask_end - off] + self.fm
        masked_cut = head.cum_masked[cut] if cut <= m else base.cum_masked[cut - off] + self.fm
        return n, n_turns, cut, mask_end, layer_c_bytes(masked_cut, masked_end, full_end, full_n)


def layer_c_bytes(masked_cut: int, masked_end: int, full_end: int, full_n: int) -> int:
    """Layer C's bytes from a tail's running sums: the items from the forget cut to the masked end in
    their masked form, the rest (to n) in full."""
    return masked_end - masked_cut + full_n - full_end


def bounds(k: ContextKnobs, n_turns: int, ends: Sequence[int]) -> tuple[int, int, int]:
    """forget and masking: the first kept turn, the first kept item, the end of the masked items."""
    first_turn, cut = 0, 0
    if k.forget_after_turns is not None and n_turns > k.forget_after_turns:
        first_turn = n_turns - k.forget_after_turns
        cut = ends[first_turn - 1]
    mask_count = max(0, n_turns - first_turn - k.observation_window)
    mask_end = ends[first_turn + mask_count - 1] if mask_count else cut
    return first_turn, cut, mask_end


def render_frame(f: Frame, mem: list[tuple[str, str]], k: ContextKnobs, allow_compaction: bool) -> RenderedContext:
    tail, n = f.tail, f.n
    b_bytes = memory_block(tuple(mem)).bytes if mem else 0
    _, cut, mask_end = bounds(k, f.n_turns, f.ends)
    c_bytes = layer_c_bytes(tail.cum_masked[cut], tail.cum_masked[mask_end], tail.cum_full[mask_end], tail.cum_full[n])
    chars = f.a_bytes + b_bytes + c_bytes
    plan = None
    if allow_compaction and chars > k.soft_cap_chars:
        plan = compaction_plan(tail, k, n, f.n_turns, f.ends)
    return _context(f, mem, k, cut, mask_end, (b_bytes, c_bytes), plan)


def _context(
    f: Frame,
    mem: list[tuple[str, str]],
    k: ContextKnobs,
    cut: int,
    mask_end: int,
    bc_bytes: tuple[int, int],
    plan: CompactionPlan | None,
) -> RenderedContext:
    """The context of frame `f` whose forget cut, masked end and Layer B/C sizes are known; its
    messages are made when first asked for."""
    b_bytes, c_bytes = bc_bytes
    shape = Shape(f.prefix, tuple(mem), f.tail, cut, mask_end, f.n, f.compactions, k)  # f.prefix: a snapshot
    count = f.a_count + (1 if mem else 0) + (f.n - cut)
    return _rendered(shape, (f.a_bytes, b_bytes, c_bytes), count, plan, f.compacted_away)


def _rendered(
    shape: Shape, abc: tuple[int, int, int], count: int, plan: CompactionPlan | None, compacted_away: int
) -> RenderedContext:
    """The context whose messages `shape` says where to find: Layer A, B and C bytes `abc`, `count`
    messages; they are made when first asked for."""
    a_bytes, b_bytes, c_bytes = abc
    chars = a_bytes + b_bytes + c_bytes
    k = shape.knobs
    return RenderedContext(
        chars=chars,
        message_count=count,
        compaction=plan,
        hard_cap_exceeded=chars > k.hard_cap_chars,
        knobs=k,
        layer_bytes={"A": a_bytes, "B": b_bytes, "C": c_bytes},
        forgotten=shape.cut,
        dropped_by_fresh=shape.tail.hidden_by_fresh,
        compacted_away=compacted_away,
        prefix_inferred=shape.prefix.inferred,
        shape=shape,
        _make_entries=partial(_shape_entries, shape),
        _make_dropped=partial(_shape_dropped, shape),
    )


def _shape_entries(s: Shape) -> list[ContextEntry]:
    """The messages of a built context, from its shape (made when first asked for)."""
    mem = list(s.memory)
    b_text = memory_block(s.memory).text if s.memory else ""
    return context_entries(s.prefix, s.tail, s.n, s.knobs, mem, b_text, s.cut, s.mask_end)


def _shape_dropped(s: Shape) -> list[ContextEntry]:
    """The messages a built context left out by forget_after_turns (with their reason)."""
    reason = f"dropped by forget_after_turns={s.knobs.forget_after_turns}"
    read_back((r, False) for r in s.tail.items[: s.cut])
    return [ContextEntry(r.message, "C", r.bytes, reason, r.seq) for r in s.tail.items[: s.cut]]


class Segment(NamedTuple):
    """What a what-if builder's contexts are made of between two of its compactions (see `Splice`):
    its tail object (holding at least a call's items by the time its messages are asked for), the
    ranges compacted so far, and how many items those compactions took away."""

    tail: Tail
    compactions: tuple[tuple[int, int], ...]
    compacted_away: int


def spliced_context(
    segment: Segment, figures: tuple[int, int, int, int, int], shown: RenderedContext, k: ContextKnobs
) -> RenderedContext:
    """The context a what-if builder following a base builder builds at a call (no compaction: its
    total is within the soft cap), from the figures `Splice.figures` found there: `shown` is the base
    builder's context of that call (its Layer A and memory)."""
    n, n_turns, cut, mask_end, c_bytes = figures
    shape = shown.shape
    assert shape is not None
    a_bytes = shown.layer_bytes["A"]
    mem = list(shape.memory)
    a_count = shown.message_count - (1 if mem else 0) - (shape.n - shown.forgotten)
    tail, compactions, compacted_away = segment
    frame = Frame(shape.prefix, a_bytes, a_count, tail, n, n_turns, (), compacted_away, compactions)
    return _context(frame, mem, k, cut, mask_end, (shown.layer_bytes["B"], c_bytes), None)


def rendered_as(ctx: RenderedContext, k: ContextKnobs, cut: int, mask_end: int, c_bytes: int) -> RenderedContext:
    """`ctx`'s build under knobs `k`, whose forget cut, masked end and Layer C bytes are these (found
    from its tail's running sums) and whose total is within `k`'s soft cap (no plan): `spliced_context`
    on `ctx`'s own tail, made straight from `ctx` (replay/lockstep.py takes only its figures: `figures_as`,
    which is held to this one)."""
    shape = ctx.shape
    assert shape is not None
    layers = ctx.layer_bytes
    other = Shape(shape.prefix, shape.memory, shape.tail, cut, mask_end, shape.n, shape.compactions, k)
    count = ctx.message_count + ctx.forgotten - cut  # Layer C from its cut to n, A and B as in ctx
    return _rendered(other, (layers["A"], layers["B"], c_bytes), count, None, ctx.compacted_away)


class Rendering(NamedTuple):
    """A build's figures under other knobs, without its context (`figures_as`): what a caller that reads
    only a call's figures (replay/lockstep.py) takes of `rendered_as`'s `RenderedContext`, and its shape
    (the prefix reuse of the stream's next call is figured from it)."""

    chars: int
    message_count: int
    hard_cap_exceeded: bool
    shape: Shape


def figures_as(ctx: RenderedContext, k: ContextKnobs, cut: int, mask_end: int, c_bytes: int) -> Rendering:
    """`rendered_as(ctx, k, cut, mask_end, c_bytes)`'s figures and shape, with no `RenderedContext` (nor
    the makers of its messages) built: the figures-only rendering (tests/test_figures_as.py holds it to
    `rendered_as` and to the messages that one makes)."""
    shape = ctx.shape
    assert shape is not None
    layers = ctx.layer_bytes
    chars = layers["A"] + layers["B"] + c_bytes
    other = Shape(shape.prefix, shape.memory, shape.tail, cut, mask_end, shape.n, shape.compactions, k)
    return Rendering(chars, ctx.message_count + ctx.forgotten - cut, chars > k.hard_cap_chars, other)


def compaction_plan(tail: Tail, k: ContextKnobs, n: int, n_turns: int, ends: Sequence[int]) -> CompactionPlan | None:
    first_turn, cut, mask_end = bounds(k, n_turns, ends)
    compactable = n_turns - first_turn - k.min_tail_turns
    if compactable <= 0:
        return None
    span_end = ends[first_turn + compactable - 1]
    end_idx = span_end - cut  # index into the forgotten body ...
    if end_idx <= 0 or n < end_idx:
        return None
    # ... used on the unforgotten list, as zymi does (docs/context.md#compaction)
    lo, hi = tail.items[0].seq, tail.items[end_idx - 1].seq
    span = shown_messages(tail, cut, span_end, mask_end)
    return CompactionPlan((lo, hi), span, _span_bytes(tail, cut, span_end, mask_end, span), compactable)


def _span_bytes(tail: Tail, cut: int, end: int, mask_end: int, span: list[MessageModel]) -> int:
    """The bytes of items [cut, end) as shown (`span`, those before `mask_end` masked), from the
    running sums (a compaction's span is thousands of messages on a long run); a simulated item is
    counted by its shown text (a placeholder), not by the size estimated for it that the sums hold."""
    mid = max(cut, min(end, mask_end))
    total = layer_c_bytes(tail.cum_masked[cut], tail.cum_masked[mid], tail.cum_full[mid], tail.cum_full[end])
    for i in [i for i in range(cut, end) if tail.items[i].simulated]:
        sums = tail.cum_masked if i < mid else tail.cum_full
        total += message_bytes(span[i - cut]) - (sums[i + 1] - sums[i])
    return total


def rerender(ctx: RenderedContext, knobs: ContextKnobs) -> RenderedContext | None:
    """`ctx`'s builder state rendered under `knobs`, as `build(memory, knobs=knobs)` would have at
    that moment (a soft-cap plan included); None for a context with no builder state (a compaction
    call's own request). O(1): the state is the tail as it was (`Shape`), which later calls only
    append to."""
    shape = ctx.shape
    if shape is None:
        return None
    tail, n = shape.tail, shape.n
    n_turns = bisect.bisect_left(tail.turn_starts, n)
    mem = list(shape.memory)
    a_count = ctx.message_count - (1 if mem else 0) - (n - ctx.forgotten)
    frame = Frame(
        shape.prefix,
        ctx.layer_bytes["A"],
        a_count,
        tail,
        n,
        n_turns,
        Ends(tail.turn_ends, n_turns, n),
        ctx.compacted_away,
        shape.compactions,
    )
    return render_frame(frame, mem, knobs, True)


def shown_messages(tail: Tail, cut: int, end: int, mask_end: int) -> list[MessageModel]:
    """Items [cut, end) as shown: those before `mask_end` that belong to a turn in their masked
    form (walked turn by turn: a compaction's span is thousands of items on a long run)."""
    items, starts, ends = tail.items, tail.turn_starts, tail.turn_ends
    masked = bytearray(end - cut)
    lim = min(end, mask_end)
    t = max(0, bisect.bisect_right(starts, cut) - 1)
    while t < len(starts) and starts[t] < lim:
        for i in range(max(starts[t], cut), min(ends[t], lim)):
            if items[i].masked_for != -1:
                masked[i - cut] = 1
        t += 1
    read_back((items[i], masked[i - cut] == 1) for i in range(cut, end))
    return [items[i].masked_message() if masked[i - cut] else items[i].message for i in range(cut, end)]


def prefix_entries(p: Prefix) -> list[ContextEntry]:
    """Layer A's messages of a built context (the first of `context_entries`)."""
    out: list[ContextEntry] = []
    if p.inferred_bytes is not None:
        note = f"inferred: Layer A is {p.inferred_bytes} bytes (recorded total minus the rebuilt rest)"
        out.append(ContextEntry(SystemMessage(content="[inferred prefix: no project]"), "A", p.inferred_bytes, note))
        if p.inferred_count > 1:
            out.append(ContextEntry(UserMessage(content="[inferred task: no project]"), "A", 0, note))
    else:
        out.append(
            ContextEntry(
                SystemMessage(content=p.system_prompt), "A", len(p.system_prompt.encode()), "kept: system prompt"
            )
        )
        if p.task:
            out.append(ContextEntry(UserMessage(content=p.task), "A", len(p.task.encode()), "kept: task"))
    return out


def memory_entry(mem: list[tuple[str, str]], b_text: str) -> ContextEntry:
    """Layer B's message of a built context (after Layer A's in `context_entries`): the memory snapshot
    `mem`, whose block's text is `b_text`."""
    cut_values = any(len(v.encode()) > 200 for _, v in mem)
    reason = "memory snapshot" + ("; values cut to 200 bytes" if cut_values else "")
    return ContextEntry(SystemMessage(content=b_text), "B", len(b_text.encode()), reason)


def shown_masked(tail: Tail, cut: int, n: int, mask_end: int) -> list[bool]:
    """Whether each of items [cut, n) is shown in its masked form (before `mask_end`, in a turn)."""
    items = tail.items
    return [i < mask_end and items[i].masked_for != -1 and tail.in_turn(i) for i in range(cut, n)]


def context_entries(
    p: Prefix,
    tail: Tail,
    n: int,
    k: ContextKnobs,
    mem: list[tuple[str, str]],
    b_text: str,
    cut: int,
    mask_end: int,
) -> list[ContextEntry]:
    out = prefix_entries(p)
    if mem:
        out.append(memory_entry(mem, b_text))
    window = f"observation_window={k.observation_window}"
    # (made once a build, not once an item)
    tool_reason, cut_reason = f"masked by {window}", f"cut to 200 bytes (turn masked by {window})"
    kept_reason = f"kept (turn masked by {window})"
    items = tail.items
    masked = shown_masked(tail, cut, n, mask_end)
    read_back((items[i], masked[i - cut]) for i in range(cut, n))
    for i in range(cut, n):
        r = items[i]
        if masked[i - cut]:
            if r.kind == TOOL:
                reason = tool_reason
            elif r.has_masked_text():
                reason = cut_reason
            else:
                reason = kept_reason
            out.append(ContextEntry(r.masked_message(), "C", r.masked_bytes, reason, r.seq, r.simulated))
        else:
            out.append(ContextEntry(r.message, "C", r.bytes, r.note or "kept", r.seq, r.simulated))
    return out
