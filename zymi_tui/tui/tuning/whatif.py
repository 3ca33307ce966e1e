"""Fast what-if replays for the editor: a run's events are read once and kept in memory, and every
knob change replays them through the same `replay_store` (and ContextBuilder) as the CLI."""

from __future__ import annotations

import bisect
import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zymi_tui.context.builder import BuildMark, ContextBuilder
from zymi_tui.context.event_items import Converted
from zymi_tui.context.knobs import ContextKnobs, project_knobs
from zymi_tui.context.prefix import ProjectPrefixes
from zymi_tui.context.rendered import Prefix, RenderedContext
from zymi_tui.context.splice import Segment, Splice, rerender, spliced_context
from zymi_tui.events.kinds import LlmCallStarted as ReplayCallStarted
from zymi_tui.events.kinds import WorkflowNodeCompleted
from zymi_tui.events.replay_view import replay_event
from zymi_tui.events.store import STEP_MARK, run_of
from zymi_tui.project.reader import read_project
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.calls import Replayer
from zymi_tui.replay.simulated import SummaryEstimate
from zymi_tui.replay.store_replay import agent_knobs
from zymi_tui.tui.tuning.collector import gc_paused
from zymi_tui.tui.tuning.memory_reader import MemoryReader

# how the last what-if was made: from the base replay's builder states (figures only, the builder
# brought to a call only where its total passes the soft cap), or by a replay of the events (from a
# base snapshot when the base covers the calls before the first compaction)
FOLLOWED, REPLAYED = "followed", "replayed"
SNAPSHOT_EVERY = 32  # agent calls between two snapshots of the base replay (a fork starts at most this far back)
NEVER = 1 << 62  # the base replay's caps: it never compacts


@dataclass
class _Base:
    """One what-if replay that never compacts, kept: until its first compaction a what-if's builder
    state does not depend on the knobs (what-if builders follow no recorded compaction, and the prefix,
    memory and fresh cutoff come from events), so each call before it is its base context re-rendered
    under the knobs (`rerender`, O(1)); from that call on a real replay runs, forked from the nearest
    snapshot of the base replayer before it."""

    calls: list[tuple[int, CallContext]]  # the stream's agent calls and the index of their LlmCallStarted
    snapshots: list[tuple[int, Replayer]]  # the replayer's state before event index i
    follow: _Follow | None = None  # what the figures-only what-if needs (None: the stream is not for it)


@dataclass
class _Follow:
    """The base replay's builder of the stream and, at each agent call (`_Base.calls`' order), its
    state (`BuildMark`) and the replay's summary-size estimate: a what-if builder is brought to any
    of those calls from them (`ContextBuilder.follow`) without the events."""

    builder: ContextBuilder
    marks: list[tuple[BuildMark, SummaryEstimate]]
    index: dict[int, int]  # an agent call's position among them, by its sequence
    ns: list[int]  # at each call: the base tail's length
    ab: list[int]  # at each call: its Layer A and memory's bytes (knob-independent)


@dataclass
class _Watch:
    """Calls `on_want` once, with the agent call at sequence `want`; `only`: that call is all that is
    asked, so the replay stops once it is given."""

    want: int | None
    on_want: Callable[[CallContext], object] | None
    only: bool = False

    def check(self, rows: list[CallContext]) -> bool:
        """Whether the replay stops here (the wanted call is among `rows`, and it is all that is asked)."""
        if self.on_want is None:
            return False
        for row in rows:
            if row.sequence == self.want and not row.is_compaction and not row.hard_cap_failure:
                self.on_want(row)
                self.on_want = None
                return self.only
        return False


class _Uncovered(Exception):
    """The figures-only what-if met a case it does not cover: the stream is replayed instead."""


def _with(call: CallContext, rendered: RenderedContext) -> CallContext:
    """A copy of `call` with another context (its attributes copied as they are: thousands of calls
    per edit; `dataclasses.replace` runs `__init__` again)."""
    row = CallContext.__new__(CallContext)
    row.__dict__.update(call.__dict__)
    row.rendered = rendered
    return row


class StreamWhatIf:
    """The exact what-if of one stream, re-run on every knob edit by the same Replayer as
    `replay_store(memory, streams=[stream_id])`, from the run's events already in memory, sorted once,
    with their messages converted once (`Converted`) and the project read once. Calls before the
    first compaction under the new knobs come from one kept base replay (`_Base`)."""

    def __init__(self, memory: MemoryReader, project: Path | None, stream_id: str) -> None:
        self.stream_id = stream_id
        # converted once: `Converted` knows an event by its identity across the re-runs
        self.events = [replay_event(se) for se in sorted(memory.events, key=lambda se: se.global_id)]
        ends: dict[str, int] = {}
        for se in memory.events:  # as `stream_ends` reads them: each stream's last event
            ends[se.event.stream_id] = se.global_id
        self.ends = ends
        self.top = max(ends.values(), default=0)
        if project is None:  # a foreign agent's step was recorded under its own policy
            self.prefixes: ProjectPrefixes | None = None
            self.recorded = agent_knobs(self.events, stream_id) or ContextKnobs()
        else:
            read = read_project(project)
            self.prefixes, self.recorded = ProjectPrefixes(read), project_knobs(read)
        self.converted = Converted()
        self.path = REPLAYED  # how the last `run` was made
        self._base: _Base | None = None
        self._base_lock = threading.Lock()
        self.base_knobs = self.recorded.replaced(soft_cap_chars=NEVER, hard_cap_chars=NEVER)
        step = stream_id.split(STEP_MARK, 1)[-1]
        # a failed step makes rows whose fate depends on the hard cap: those streams are always replayed
        self.forkable = self.base_knobs != self.recorded and not any(
            isinstance(e.kind, WorkflowNodeCompleted) and not e.kind.success and e.kind.node_id == step
            for e in self.events
            if e.stream_id == run_of(stream_id)
        )

    def _replayer(self, knobs: ContextKnobs) -> Replayer:
        replayer = Replayer(self.prefixes, self.recorded, knobs, converted=self.converted, track_reuse=False)
        replayer.forget_finished(self.ends)
        return replayer

    def base(self) -> _Base:
        """The base replay (made once, on first use; a second thread asking meanwhile waits for it)."""
        with self._base_lock:
            return self._make_base()

    def _make_base(self) -> _Base:
        if self._base is None:
            replayer = self._replayer(self.base_knobs)
            at: dict[int, int] = {}  # an agent call's global id -> its event index
            calls: list[CallContext] = []
            snapshots: list[tuple[int, Replayer]] = []
            marks: dict[int, tuple[ContextBuilder, BuildMark, SummaryEstimate]] = {}  # by global id
            since = SNAPSHOT_EVERY
            for i, se in enumerate(self.events):
                if se.global_id > self.top:
                    break
                if se.stream_id == self.stream_id and isinstance(se.kind, ReplayCallStarted):
                    at[se.global_id] = i
                    if since >= SNAPSHOT_EVERY:
                        snapshots.append((i, replayer.fork(self.base_knobs)))
                        since = 0
                    since += 1
                    st = replayer.steps.get(self.stream_id)
                    if st is not None and not st.infer:
                        b = st.builder
                        marks[se.global_id] = (b, b.mark(), copy.copy(replayer.estimate))
                replayer.feed(se)
                calls.extend(r for r in replayer.ready() if r.stream_id == self.stream_id)
            calls.extend(r for r in replayer.flush() if r.stream_id == self.stream_id)
            self._base = _Base([(at[c.global_id], c) for c in calls], snapshots, self._followable(calls, marks))
        return self._base

    def _followable(
        self, calls: list[CallContext], marks: dict[int, tuple[ContextBuilder, BuildMark, SummaryEstimate]]
    ) -> _Follow | None:
        """The base's builder states at its agent calls, if the figures-only what-if covers the stream:
        the what-if is forkable (no failed step), one builder all along, Layer A known at every call
        (never inferred: that inference is made on the what-if builder's own state), no fresh cutoff
        (the tail is then one list, only appended to, holding every item), and every call's context a
        build of that tail as it was then."""
        if not self.forkable or not calls:
            return None
        first = marks.get(calls[0].global_id)
        if first is None:
            return None
        builder, tail = first[0], first[1].tail
        kept: list[tuple[BuildMark, SummaryEstimate]] = []
        ab: list[int] = []
        for call in calls:
            got, shown = marks.get(call.global_id), call.rendered
            shape = None if shown is None else shown.shape
            if got is None or got[0] is not builder or shown is None or shape is None:
                return None
            mark = got[1]
            if mark.tail is not tail or mark.cutoff is not None or shape.tail is not tail or shape.n != mark.n:
                return None
            if mark.n != mark.raw or shape.prefix is not mark.prefix or shape.compactions:
                return None
            kept.append((mark, got[2]))
            ab.append(shown.layer_bytes["A"] + shown.layer_bytes["B"])
        index = {call.sequence: i for i, call in enumerate(calls)}
        return _Follow(builder, kept, index, [mark.n for mark, _ in kept], ab)

    def run(
        self,
        knobs: ContextKnobs | None,
        *,
        stop: Callable[[], bool] = lambda: False,
        partial: Callable[[list[CallContext]], object] | None = None,
        every_s: float = 1.0,
        want: int | None = None,
        on_want: Callable[[CallContext], object] | None = None,
    ) -> list[CallContext] | None:
        """The stream's calls under `knobs` (None: recorded); None if `stop()` said so first.
        `partial` gets the calls so far every `every_s` seconds; `on_want` the agent call at sequence
        `want` as soon as it is known (before the rest of the stream)."""
        watch = _Watch(want, on_want)
        with gc_paused():
            return self._run(knobs or self.recorded, stop, partial, every_s, watch)

    def call_at(self, knobs: ContextKnobs, sequence: int, *, within_s: float) -> CallContext | None:
        """The agent call at `sequence` under `knobs`, the rest of the stream not made; None if it is
        not known within `within_s` seconds, or if the base replay is not made yet (making it takes
        longer). For a caller that must not wait long: the UI thread, for the call on screen."""
        if self.forkable and self._base is None:
            return None
        found: list[CallContext] = []
        deadline = time.perf_counter() + within_s
        with gc_paused():
            self._run(knobs, lambda: time.perf_counter() > deadline, None, 1.0, _Watch(sequence, found.append, True))
        return found[0] if found else None

    def _run(
        self,
        k: ContextKnobs,
        stop: Callable[[], bool],
        partial: Callable[[list[CallContext]], object] | None,
        every_s: float,
        watch: _Watch,
    ) -> list[CallContext] | None:
        self.path = REPLAYED
        if k == self.recorded or not self.forkable:
            return self._replay(self._replayer(k), 0, [], stop, partial, every_s, watch)
        base = self.base()
        if base.follow is not None:
            try:
                calls = self._follow(k, base.calls, base.follow, stop, watch)
            except _Uncovered:
                pass
            else:
                self.path = FOLLOWED
                return calls
        out: list[CallContext] = []
        for i, call in base.calls:
            ctx = rerender(call.rendered, k) if call.rendered is not None else None
            if ctx is None or ctx.compaction is not None:  # this call compacts: a real replay from here
                start, snapshot = base.snapshots[bisect.bisect_right(base.snapshots, i, key=lambda s: s[0]) - 1]
                kept = sum(1 for j, _ in base.calls[: len(out)] if j < start)
                return self._replay(snapshot.fork(k), start, out[:kept], stop, partial, every_s, watch)
            out.append(_with(call, ctx))
            if watch.check(out[-1:]):
                return None
        return out

    def _follow(
        self,
        k: ContextKnobs,
        calls: list[tuple[int, CallContext]],
        follow: _Follow,
        stop: Callable[[], bool],
        watch: _Watch,
    ) -> list[CallContext] | None:
        """The what-if from the base replay's builder states, with no event fed: a builder under `k`
        stays level with the base one in figures only (`Splice`: its tail after its last compaction,
        then the base's items), and is brought to a call (`ContextBuilder.follow`) only where its
        total passes the soft cap, where the replay's own code decides and makes the compaction.
        The figures of every call first, then the watched call's row (`watch`), then the others'.
        Raises `_Uncovered` (before the watched call is given) where following would not be what a
        replay does."""
        w = ContextBuilder(k, Prefix("", ""), follow_recorded_compactions=False)
        base_tail = follow.marks[0][0].tail
        splice = Splice(w.tail, base_tail, 0)
        segment = Segment(base_tail, (), 0)  # what the contexts are made of since the last compaction
        since: BuildMark | None = None
        replayer = self._replayer(k)
        made: list[RenderedContext | tuple[tuple[int, int, int, int, int], Segment]] = []
        compactions: dict[int, Callable[[], CallContext]] = {}  # the row of the compaction made at a call, by its index
        figures_at, ab, soft = splice.figures, follow.ab, k.soft_cap_chars
        for index, n_base in enumerate(follow.ns):  # (done for every call on every edit: kept lean)
            if index & 127 == 0 and stop():
                return None
            figures = figures_at(n_base, k)
            if ab[index] + figures[4] <= soft:
                made.append((figures, segment))
                continue
            call, (mark, estimate) = calls[index][1], follow.marks[index]
            shown = call.rendered
            assert shown is not None and shown.shape is not None
            if not w.follow(follow.builder, since, mark):  # the builder brought to this call, built as a replay does
                raise _Uncovered
            since = mark
            memory = list(shown.shape.memory)
            ctx = w.build(memory)
            if ctx.compaction is not None:
                replayer.estimate = copy.copy(estimate)
                compactions[index] = replayer.compact(call, w, ctx.compaction)
                ctx = w.build(memory, allow_compaction=False, apply_fresh=False)
                if not w.can_follow(base_tail, mark.n) or ctx.shape is None:
                    raise _Uncovered
                figures_at = Splice(w.tail, base_tail, mark.n).figures
                segment = Segment(w.tail, ctx.shape.compactions, ctx.compacted_away)
            made.append(ctx)
        if since is not None and not w.follow(follow.builder, since, follow.marks[-1][0]):
            raise _Uncovered  # (the last calls' messages are read from the builder's tail)

        def row(index: int) -> CallContext:
            call, how = calls[index][1], made[index]
            if isinstance(how, RenderedContext):
                return _with(call, how)
            assert call.rendered is not None
            return _with(call, spliced_context(how[1], how[0], call.rendered, k))

        wanted = follow.index.get(watch.want) if watch.want is not None else None
        first = None if wanted is None else row(wanted)
        if first is not None and watch.check([first]):
            return None
        out: list[CallContext] = []
        for index in range(len(calls)):
            if index in compactions:
                out.append(compactions[index]())
            out.append(first if index == wanted and first is not None else row(index))
        return out

    def _replay(
        self,
        replayer: Replayer,
        start: int,
        out: list[CallContext],
        stop: Callable[[], bool],
        partial: Callable[[list[CallContext]], object] | None,
        every_s: float,
        watch: _Watch,
    ) -> list[CallContext] | None:
        """Feed the events from index `start` on to `replayer`, after the calls `out` already known."""
        due = time.perf_counter() + every_s
        for i in range(start, len(self.events)):
            se = self.events[i]
            if se.global_id > self.top:
                break
            replayer.feed(se)
            rows = replayer.ready()
            if rows:
                mine = [r for r in rows if r.stream_id == self.stream_id]
                out.extend(mine)
                if watch.check(mine):
                    return None
            if i & 127 == 0:
                if stop():
                    return None
                if partial is not None and time.perf_counter() >= due:
                    partial(list(out))
                    due = time.perf_counter() + every_s
        mine = [r for r in replayer.flush() if r.stream_id == self.stream_id]
        out.extend(mine)
        watch.check(mine)
        return out
