"""Store-level replay: every LLM call of a store, rebuilt by the context engine.

One pass over the store in global order keeps, per step stream, an incremental
ContextBuilder, and per run its inputs, memory and step outputs
(docs/context.md#dependencies, #memory, #fresh-mode),
so a whole-store replay is linear. With other knobs than the recorded ones (what-if) the same
trajectory is assumed: recorded compactions are used only where the new knobs compact the
same range; elsewhere a simulated summary of estimated size is inserted.
"""

from __future__ import annotations

import copy
import dataclasses
import heapq
from array import array
from collections import deque
from collections.abc import Callable

from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.event_items import Converted, fast_ts_ns
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.layer_c import TextSource
from zymi_tui.context.prefix import ProjectPrefixes
from zymi_tui.context.rendered import Prefix, RenderedContext
from zymi_tui.events.kinds import (
    ContextCompacted,
    LlmCallCompleted,
    LlmCallFailed,
    LlmCallStarted,
    MemoryDeleted,
    MemoryWritten,
    PipelineCompleted,
    PipelineRequested,
    WorkflowNodeCompleted,
    WorkflowNodeStarted,
)
from zymi_tui.events.messages import AssistantMessage
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK, run_of
from zymi_tui.replay.call_builds import RunState as _Run
from zymi_tui.replay.call_builds import StepBuilds
from zymi_tui.replay.call_builds import StepState as _Step
from zymi_tui.replay.call_context import (
    AGENT_KNOBS,
    HARD_CAP_ERROR,
    PROJECT_KNOBS,
    SAME_TRAJECTORY,
    STORE_KNOBS,
    UNKNOWN_KNOBS,
    CallContext,
    CallState,
    StepDescription,
    exceeds_hard_cap,
    self_described,
)
from zymi_tui.replay.run_lifetimes import RunLifetimes
from zymi_tui.replay.simulated import SummaryEstimate, compaction_context
from zymi_tui.replay.store_ends import Ends


class Replayer(StepBuilds, RunLifetimes):
    """The replay's state machine: `feed()` every event in global order, collect rows from `ready()`."""

    def __init__(
        self,
        project: ProjectPrefixes | None,
        recorded: ContextKnobs,
        knobs: ContextKnobs,
        *,
        converted: Converted | None = None,
        track_reuse: bool = True,
        explicit: bool = False,
        texts: Callable[[str], TextSource] | None = None,
    ) -> None:
        """`converted`: the events' messages converted once, shared with other replays of the same
        events (the knob editor's re-runs); `track_reuse=False` skips the prefix-reuse figures;
        `texts`: a step stream's text source, for its builder to drop old texts (context/texts.py)."""
        self.project = project
        self.texts = texts
        self.converted = converted
        self.track_reuse = track_reuse
        self.recorded_knobs = recorded
        self.knobs = knobs
        self.whatif = knobs != recorded
        # `knobs` were asked for (a profile, a --set): a foreign agent's step, recorded under its own
        # policy, is then a what-if even when they equal the project-level recorded ones
        self.explicit = explicit or self.whatif
        self.runs: dict[str, _Run] = {}
        self.steps: dict[str, _Step] = {}
        self.queue: deque[CallContext] = deque()  # rows in store order, yielded once done
        self.pending: dict[str, deque[CallContext]] = {}  # per stream: rows awaiting their LlmCallCompleted
        self.estimate = SummaryEstimate()
        # with `forget_finished`: each stream's last global id, and when each step's builder can go
        self.ends: Ends = dict[str, int]()
        self._expiry: list[tuple[int, bool, str]] = []  # (when, a run?, its key or the step's stream)
        self._run_ends: dict[str, int] = {}  # a run's key: the last event of its run stream(s), or its closing
        self._closings: array[int] = array("q")  # with `forget_finished`: the completions that close their run
        self._stale = 0  # run entries of `_expiry` left behind by runs dropped at their closing
        self._peeked: tuple[ReplayEvent, RenderedContext] | None = None  # `next_build_chars`' build, for `feed`

    def fork(self, knobs: ContextKnobs, *, lockstep: bool = False) -> Replayer:
        """A what-if replayer that goes on from this one's state under `knobs` (this one must be a
        what-if too, so its builders have followed no recorded compaction). Rows made so far stay
        here; rows still awaiting their LlmCallCompleted are shared (the fork fills in the same
        recorded figures). This replayer is left as it was.

        `lockstep`: both will be fed the same events from here on, so they share the runs' inputs,
        memory and outputs (the same values written by both; a failed step's row is marked by both,
        the same way) instead of copying every run seen so far."""
        assert self.whatif and knobs != self.recorded_knobs
        other = copy.copy(self)
        other.knobs = knobs
        other._peeked = None
        runs: dict[int, _Run] | None = None  # lockstep: the same runs
        if not lockstep:
            held = [*self.runs.values(), *(st.run for st in self.steps.values() if st.run is not None)]
            runs = {id(run): _Run(run.pipeline, dict(run.inputs), dict(run.memory), dict(run.outputs)) for run in held}
            other.runs = {key: runs[id(run)] for key, run in self.runs.items()}
        other.steps = {}
        for stream, st in self.steps.items():
            builder = st.builder.clone()
            builder.knobs = knobs
            run = st.run if runs is None or st.run is None else runs.get(id(st.run))
            other.steps[stream] = dataclasses.replace(st, builder=builder, run=run)
        other.queue = deque()
        other.pending = {stream: deque(rows) for stream, rows in self.pending.items()}
        other.estimate = copy.copy(self.estimate)
        other._expiry = list(self._expiry)
        other._run_ends = dict(self._run_ends)
        return other

    # -- helpers ------------------------------------------------------------------------------
    def _step(self, stream: str) -> _Step:
        st = self.steps.get(stream)
        if st is None:
            prefix = Prefix("", "", inferred_bytes=0, inferred_count=0)
            texts = None if self.texts is None else self.texts(stream)
            builder = ContextBuilder(self.knobs, prefix, follow_recorded_compactions=not self.whatif, texts=texts)
            source = PROJECT_KNOBS if self.project is not None else UNKNOWN_KNOBS
            st = self.steps[stream] = _Step(builder, infer=True, knobs_source=source)
            if self.ends:
                end = max(self.ends.get(stream, 0), self.ends.get(run_of(stream), 0))
                heapq.heappush(self._expiry, (end, False, stream))
        return st

    def ready(self) -> list[CallContext]:
        out = []
        while self.queue and self.queue[0]._done:
            row = self.queue.popleft()
            if not row._drop:
                out.append(row)
        return out

    def flush(self) -> list[CallContext]:
        out = [
            r
            for r in self.queue
            if not r._drop and not (r.hard_cap_failure and not r.recorded_chars and not exceeds_hard_cap(r))
        ]
        self.queue.clear()
        return out

    # -- events -------------------------------------------------------------------------------
    def feed(self, se: ReplayEvent) -> None:
        expiry = self._expiry
        if expiry and expiry[0][0] < se.global_id:
            self._expire(se.global_id)
        if STEP_MARK in se.stream_id:
            self._on_step(se)
        else:
            self._on_run(se)

    def _on_run(self, se: ReplayEvent) -> None:
        ev, kind = se, se.kind
        key = ev.correlation_id or ev.stream_id
        if isinstance(kind, PipelineRequested):
            run = self._run(key, ev.stream_id)
            run.pipeline, run.inputs = kind.pipeline, dict(kind.inputs)
        elif isinstance(kind, MemoryWritten):
            self._run(key, ev.stream_id).memory[kind.key] = kind.value
        elif isinstance(kind, MemoryDeleted):
            self._run(key, ev.stream_id).memory.pop(kind.key, None)
        elif isinstance(kind, WorkflowNodeStarted):
            self._start_step(
                ev.stream_id, kind.node_id, self._run(key, ev.stream_id), ev.timestamp, self_described(kind)
            )
        elif isinstance(kind, WorkflowNodeCompleted) and not kind.success:
            self._failed_step(se, f"{ev.stream_id}{STEP_MARK}{kind.node_id}")
        elif isinstance(kind, PipelineCompleted) and kind.error:
            m = HARD_CAP_ERROR.match(kind.error)
            for row in self._run(key, ev.stream_id).failure_rows:
                if m and row.stream_id.endswith(f"{STEP_MARK}{m['step']}"):
                    row.recorded_chars = int(m["n"])
                    row.note = f"recorded: {kind.error}"
                    if row.whatif and not exceeds_hard_cap(row):
                        row.note += "; under these knobs the build passes the hard cap"
                elif not exceeds_hard_cap(row):
                    row._drop = True  # the step failed for another reason
                row._done = True
        if isinstance(kind, PipelineCompleted) and self._closings and ev.correlation_id:
            self._closed(key, se.global_id)

    def _start_step(self, run_stream: str, step_id: str, run: _Run, ts: str, described: StepDescription | None) -> None:
        st = self._step(f"{run_stream}{STEP_MARK}{step_id}")
        st.run = run
        st.knobs_source = PROJECT_KNOBS if self.project is not None else UNKNOWN_KNOBS
        prefix = None
        fresh = False
        st.started_ns = fast_ts_ns(ts)
        cutoff = None
        if self.project is not None and run.pipeline is not None:
            prefix = self.project.prefix(run.pipeline, step_id, run.inputs, run.outputs)
            spec = self.project.step(run.pipeline, step_id)
            fresh = bool(spec and spec.fresh)
            cutoff = st.started_ns if fresh else None
        if prefix is None and described is not None:  # the step described itself (our engine, or spans taken in)
            prefix, cutoff = described.prefix, described.fresh_cutoff_ns
            if described.knobs is not None:
                st.knobs_source = AGENT_KNOBS if described.origin == "otel" else STORE_KNOBS
                st.whatif = self.explicit and st.knobs_source == AGENT_KNOBS
                if not self.whatif and not st.whatif:
                    st.builder.knobs = described.knobs
        st.infer = prefix is None
        st.builder.set_prefix(prefix or Prefix("", "", inferred_bytes=0, inferred_count=0), cutoff)

    def state_before(self, call: ReplayEvent) -> CallState:
        """The builder state just before the LlmCallStarted `call` (the replayer was fed every event before
        it): re-rendering that call under other knobs is one `build()`. Layer A is inferred here if needed."""
        kind = call.kind
        assert isinstance(kind, LlmCallStarted)
        st = self._step(call.stream_id)
        memory = self._memory(st)
        if st.infer:
            self._infer_prefix(st, kind, memory)
        return CallState(st.builder, memory, st.builder.last_was_compaction)

    def next_build_chars(self, se: ReplayEvent) -> int | None:
        """The size of the context a what-if build that feeding `se` makes (soft-cap plan allowed: an
        agent call's, or a failed step's), None if it makes none. The state is left as feeding `se`
        would leave it before that build (a step is created, Layer A inferred)."""
        kind = se.kind
        if STEP_MARK in se.stream_id:
            if not isinstance(kind, LlmCallStarted) or kind.iteration == 0 or se.source == "compaction":
                return None
            state = self.state_before(se)
            ctx = state.builder.build(state.memory)
            self._peeked = (se, ctx)
            return ctx.chars
        if isinstance(kind, WorkflowNodeCompleted) and not kind.success:
            st = self.steps.get(f"{se.stream_id}{STEP_MARK}{kind.node_id}")
            if st is not None and st.run is not None:
                return st.builder.build(self._memory(st)).chars
        return None

    def _memory(self, st: _Step) -> list[tuple[str, str]]:
        return list(st.run.memory.items()) if st.run else []

    def _failed_step(self, se: ReplayEvent, stream: str) -> None:
        st = self.steps.get(stream)
        if st is None or st.run is None:
            return
        b = st.builder
        memory = self._memory(st)
        if self.whatif:
            ctx = b.build(memory)
            if ctx.compaction is not None:
                self._whatif_compaction(stream, b.last_seq + 1, se.global_id, st, ctx.compaction)
                ctx = b.build(memory, allow_compaction=False, apply_fresh=False)
        else:
            post = b.last_was_compaction
            ctx = b.build(memory, allow_compaction=False, apply_fresh=not post)
        row = CallContext(
            knobs_source=st.knobs_source,
            stream_id=stream,
            sequence=st.builder.last_seq + 1,
            global_id=se.global_id,
            iteration=-1,
            is_compaction=False,
            recorded_chars=0,
            recorded_message_count=0,
            recorded_input_tokens=None,
            rendered=None if st.infer else ctx,
            prefix_inferred=st.builder.prefix.inferred,
            prefix_basis=st.builder.prefix.basis,
            hard_cap_failure=True,
            whatif=self.whatif,
            note="the step failed here; no LlmCallStarted was written",
        )
        st.run.failure_rows.append(row)
        self.queue.append(row)

    def _on_step(self, se: ReplayEvent) -> None:
        # by the kind's exact type (the decoded kinds are the structs themselves, never subclasses):
        # one comparison for the kinds a step stream is mostly made of, not a chain of isinstance
        kind = se.kind
        st = self.steps.get(se.stream_id) or self._step(se.stream_id)
        t = type(kind)
        if t is LlmCallStarted:
            self._on_call(se, st, kind)  # type: ignore[arg-type]
        elif t is LlmCallCompleted or t is LlmCallFailed:
            self._call_done(se, st, kind)  # type: ignore[arg-type]
        elif t is ContextCompacted:
            self.estimate.learn(kind.summary, kind.bytes_saved)  # type: ignore[union-attr]
        st.builder.add(se, self.converted)

    def _call_done(self, se: ReplayEvent, st: _Step, kind: LlmCallCompleted | LlmCallFailed) -> None:
        waiting = self.pending.get(se.stream_id)
        completed = type(kind) is LlmCallCompleted
        if waiting:
            row = waiting.popleft()
            if not waiting:  # (a fork copies the streams still waiting, not every stream seen)
                del self.pending[se.stream_id]
            if completed:
                assert isinstance(kind, LlmCallCompleted)
                if kind.usage is not None:
                    u = kind.usage
                    row.recorded_input_tokens, row.recorded_output_tokens = u.input_tokens, u.output_tokens
                    row.recorded_cached_tokens = u.cached_input_tokens
                    row.recorded_cache_creation_tokens = u.cache_creation_tokens
                row.finish_reason, row.done_ts_ns = kind.finish_reason, fast_ts_ns(se.timestamp)
            row._done = True
        if completed and not kind.has_tool_calls and se.source != "compaction":  # type: ignore[union-attr]
            step = se.stream_id.split(STEP_MARK, 1)[1]
            msg = kind.response_message  # type: ignore[union-attr]
            text = msg.content if isinstance(msg, AssistantMessage) else None
            if st.run is not None:
                st.run.outputs[step] = text or ""

    def _on_call(self, se: ReplayEvent, st: _Step, kind: LlmCallStarted) -> None:
        ev = se
        b = st.builder
        is_compaction = kind.iteration == 0 or ev.source == "compaction"
        row = CallContext(
            knobs_source=st.knobs_source,
            stream_id=ev.stream_id,
            sequence=ev.sequence,
            global_id=se.global_id,
            iteration=kind.iteration,
            is_compaction=is_compaction,
            recorded_chars=kind.approx_context_chars,
            recorded_message_count=kind.message_count,
            recorded_input_tokens=None,
            rendered=None,
            prefix_inferred=False,
            whatif=self.whatif or st.whatif,
            ts_ns=fast_ts_ns(ev.timestamp),
            correlation_id=ev.correlation_id,
            pipeline=st.run.pipeline if st.run is not None else None,
        )
        if is_compaction:
            if self.whatif:
                return  # the what-if decides its own compactions at the agent calls
            plan = b.plan_compaction()
            row.rendered = compaction_context(plan, self.knobs) if plan else None
            row.compaction_plan = plan
            self._await(row)
            return
        memory = self._memory(st)
        if st.infer:
            self._infer_prefix(st, kind, memory)
        if self.whatif or st.whatif:
            peeked, self._peeked = self._peeked, None
            ctx = peeked[1] if peeked is not None and peeked[0] is se else b.build(memory)
            if ctx.compaction is not None:
                self._whatif_compaction(ev.stream_id, ev.sequence, se.global_id, st, ctx.compaction)
                ctx = b.build(memory, allow_compaction=False, apply_fresh=False)
            row.note = SAME_TRAJECTORY
        else:
            post = b.last_was_compaction
            ctx = b.build(memory, allow_compaction=not post, apply_fresh=not post)
        row.rendered = ctx
        row.prefix_inferred = b.prefix.inferred
        row.prefix_basis = b.prefix.basis
        if self.track_reuse:
            self._track_reuse(st, row)
        self._await(row)

    def _await(self, row: CallContext) -> None:
        self.queue.append(row)
        self.pending.setdefault(row.stream_id, deque()).append(row)
