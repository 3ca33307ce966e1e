"""Store-level replay: every LLM call of a store, rebuilt by the context engine.

One pass over the store in global order keeps, per step stream, an incremental
ContextBuilder, and per run its inputs, memory and step outputs
(docs/context.md#dependencies, #memory, #fresh-mode),
so a whole-store replay is linear. With other knobs than the recorded ones (what-if) the same
trajectory is assumed: recorded compactions are used only where the new knobs compact the
same range; elsewhere a simulated summary of estimated size is inserted.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import heapq
import re
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from zymi_tui.context.builder import (
    COMPACTION_PROMPT,
    CompactionPlan,
    ContextBuilder,
    ContextEntry,
    Converted,
    Prefix,
    RenderedContext,
    Shape,
    fast_ts_ns,
)
from zymi_tui.context.knobs import ContextKnobs, project_knobs
from zymi_tui.context.masking import message_bytes
from zymi_tui.context.prefix import ProjectPrefixes
from zymi_tui.context.reuse import PrefixReuse, prefix_reuse
from zymi_tui.errors import UserError
from zymi_tui.events.envelope import EventDecodeError
from zymi_tui.events.kinds import snake_tag
from zymi_tui.events.messages import AssistantMessage
from zymi_tui.events.replay_kinds import (
    ContextCompacted,
    LlmCallCompleted,
    LlmCallFailed,
    LlmCallStarted,
    MemoryDeleted,
    MemoryWritten,
    PipelineCompleted,
    PipelineRequested,
    ReplayEvent,
    ToolCallCompleted,
    UserMessageReceived,
    WorkflowNodeCompleted,
    WorkflowNodeStarted,
    decode_replay_row,
    replay_event,
)
from zymi_tui.events.store import STEP_MARK, EventReader, RowPage, run_of
from zymi_tui.events.stored import BadRow
from zymi_tui.project.reader import read_project

PAGE = 2000
# the kinds a replay reads: Layer C, the prefix and memory, failures (docs/context.md#layers, #memory, #hard-cap)
TYPE_BY_TAG = {
    snake_tag(k.__name__): k.__name__
    for k in (
        LlmCallStarted, LlmCallCompleted, LlmCallFailed, ToolCallCompleted, UserMessageReceived, ContextCompacted,
        PipelineRequested, MemoryWritten, MemoryDeleted, WorkflowNodeStarted, WorkflowNodeCompleted, PipelineCompleted,
    )
}  # fmt: skip
REPLAY_KINDS = tuple(TYPE_BY_TAG)
HARD_CAP_ERROR = re.compile(r"^\[(?P<step>[^\]]+)\] context build failed: context exceeds hard cap: (?P<n>\d+) chars")
DEFAULT_SUMMARY_RATIO = 0.10  # used only when the store has no recorded compaction to learn from
MAX_SUMMARY_BYTES = 4096  # a compaction reply is capped at max_tokens 1024 (~4 bytes/token)
SAME_TRAJECTORY = "what-if: assumes the same trajectory (the recorded tool calls and answers)"
# where a call's recorded knobs come from: the project's runtime.context, the store (our engine
# records them on each step's WorkflowNodeStarted), or nowhere (replayed under the engine defaults)
PROJECT_KNOBS, STORE_KNOBS, UNKNOWN_KNOBS = "project", "store", "unknown"
# a foreign agent's calls, taken in from its spans (docs/telemetry-in.md): zymi's builder never ran; the
# recorded context is what the agent sent, and the replay under the recorded knobs is its own history
# with nothing masked or dropped
AGENT_KNOBS = "agent"
AGENT_SENT = "sent by the agent (its spans): zymi's builder never ran for this call"


class ReplayError(UserError):
    """An unknown stream or sequence, or a prefix that cannot be known; one line for a person."""

    title = "Replay"


@dataclass
class CallContext:
    """One LLM call (or one failed build) of a store, with its rebuilt context."""

    stream_id: str
    sequence: int  # of the LlmCallStarted (a failed build: where it would have been)
    global_id: int
    iteration: int  # 0 = a compaction call
    is_compaction: bool
    recorded_chars: int  # a failed build: the total in the recorded error; a simulated call: 0
    recorded_message_count: int
    recorded_input_tokens: int | None  # usage of the matching LlmCallCompleted (includes cached)
    rendered: RenderedContext | None  # None when the prefix cannot be known (no project)
    prefix_inferred: bool
    hard_cap_failure: bool = False  # a recorded build that failed the hard cap (no LlmCallStarted)
    simulated: bool = False  # a what-if compaction with no recorded counterpart
    whatif: bool = False
    note: str = ""
    compaction_plan: CompactionPlan | None = None  # a compaction call: the span, range and bytes it covers
    prefix_basis: str | None = None  # Layer A inferred: how its size was found (the figures are estimates)
    knobs_source: str = UNKNOWN_KNOBS  # the recorded knobs: PROJECT_KNOBS, STORE_KNOBS, AGENT_KNOBS or UNKNOWN_KNOBS
    # usage of the matching LlmCallCompleted: provider-reported cache figures and output
    recorded_cached_tokens: int | None = None
    recorded_cache_creation_tokens: int | None = None
    recorded_output_tokens: int | None = None
    ts_ns: int | None = None  # the LlmCallStarted's timestamp (cache lifetimes)
    reuse: PrefixReuse | None = None  # an agent call: the prefix shared with the stream's previous agent call
    correlation_id: str | None = None  # the run the call belongs to
    finish_reason: str | None = None  # of the matching LlmCallCompleted
    done_ts_ns: int | None = None  # its timestamp
    pipeline: str | None = None
    _done: bool = field(default=False, repr=False)
    _drop: bool = field(default=False, repr=False)

    @property
    def chars(self) -> int | None:
        return None if self.rendered is None else self.rendered.chars

    @property
    def message_count(self) -> int | None:
        return None if self.rendered is None else self.rendered.message_count

    @property
    def foreign(self) -> bool:
        """A call of a foreign agent: its recorded figures are what it sent, not a zymi build."""
        return self.knobs_source == AGENT_KNOBS

    @property
    def guessed(self) -> list[str]:
        """What this call's rebuild guesses because no project (nor the store) says it."""
        return [what for what, yes in (("Layer A", self.prefix_inferred),
                                       ("the recorded knobs", self.knobs_source == UNKNOWN_KNOBS)) if yes]  # fmt: skip


@dataclass
class _Run:
    pipeline: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    memory: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    failure_rows: list[CallContext] = field(default_factory=list)


@dataclass
class _Step:
    builder: ContextBuilder
    run: _Run | None = None
    infer: bool = False  # Layer A is to be inferred at the next agent call
    prev_shape: Shape | None = None  # the previous sent agent call's context (prefix reuse)
    knobs_source: str = UNKNOWN_KNOBS  # where this step run's recorded knobs come from
    started_ns: int | None = None  # this run's WorkflowNodeStarted (the fresh cutoff, docs/context.md#fresh-mode)
    whatif: bool = False  # a foreign agent's step under knobs asked for explicitly (not its own policy)


class SummaryEstimate:
    """Simulated summary sizes: the recorded summaries' compression ratio (bytes out / span in)."""

    def __init__(self) -> None:
        self.summary_bytes = 0
        self.span_bytes = 0

    def learn(self, summary: str, bytes_saved: int) -> None:
        n = len(summary.encode())
        self.summary_bytes += n
        self.span_bytes += n + bytes_saved

    def estimate(self, span_bytes: int) -> tuple[int, str]:
        if self.span_bytes > 0:
            ratio = self.summary_bytes / self.span_bytes
            basis = f"ratio {ratio:.1%} of the recorded summaries"
        else:
            ratio, basis = DEFAULT_SUMMARY_RATIO, f"assumed ratio {DEFAULT_SUMMARY_RATIO:.0%} (no recorded summary)"
        return max(1, min(MAX_SUMMARY_BYTES, round(span_bytes * ratio))), basis


def compaction_context(plan: CompactionPlan, knobs: ContextKnobs, *, simulated: bool = False) -> RenderedContext:
    """The compaction call's own request: the fixed prompt and the masked span."""
    system, user = plan.request_messages
    lo, hi = plan.replaces_seq_range
    entries = [
        ContextEntry(system, "A", message_bytes(system), "compaction prompt (fixed)"),
        ContextEntry(user, "C", message_bytes(user), f"masked span of seq {lo}..{hi}, {plan.turns} turn(s)"),
    ]
    chars = sum(e.bytes for e in entries)
    return RenderedContext(
        chars=chars,
        message_count=2,
        compaction=None,
        hard_cap_exceeded=False,
        knobs=knobs,
        layer_bytes={"A": len(COMPACTION_PROMPT.encode()), "B": 0, "C": entries[1].bytes},
        _make_entries=lambda: entries,
    )


@dataclass(frozen=True)
class CallState:
    """A step stream's builder, its run's memory, and whether the last call was a compaction."""

    builder: ContextBuilder
    memory: list[tuple[str, str]]
    post_compaction: bool


@dataclass(frozen=True)
class StepDescription:
    """What our engine records on an agent step's WorkflowNodeStarted (extra field `zymi_tui`)."""

    prefix: Prefix
    fresh_cutoff_ns: int | None
    knobs: ContextKnobs | None
    origin: str | None = None  # "otel": a foreign agent's step, taken in from its spans


def self_described(kind: WorkflowNodeStarted) -> StepDescription | None:
    """The step's own description, when zymi-tui's engine wrote it (zymi's readers ignore the field)."""
    extra = kind.zymi_tui
    if not isinstance(extra, dict) or not isinstance(extra.get("system_prompt"), str):
        return None
    try:
        knobs = ContextKnobs.model_validate(extra["knobs"]) if isinstance(extra.get("knobs"), dict) else None
    except ValueError:
        knobs = None
    cutoff = extra.get("fresh_cutoff_ns") if extra.get("context_mode") == "fresh" else None
    return StepDescription(
        Prefix(extra["system_prompt"], str(extra.get("task") or "")),
        cutoff if isinstance(cutoff, int) else None,
        knobs,
        str(extra["origin"]) if extra.get("origin") else None,
    )


class Replayer:
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
    ) -> None:
        """`converted`: the events' messages converted once, shared with other replays of the same
        events (the knob editor's re-runs); `track_reuse=False` skips the prefix-reuse figures."""
        self.project = project
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
        self.ends: dict[str, int] = {}
        self._expiry: list[tuple[int, bool, str]] = []  # (when, a run?, its key or the step's stream)
        self._run_ends: dict[str, int] = {}  # a run's key: the last event of its run stream(s)
        self._peeked: tuple[ReplayEvent, RenderedContext] | None = None  # `next_build_chars`' build, for `feed`

    def forget_finished(self, ends: dict[str, int]) -> None:
        """Drop a step's builder once the replay has passed the last event of its stream and of its run
        stream (`ends`: each stream's last global id, read before the replay): no later event can need
        it, so memory stays flat in the store's size. Events past `ends` must not be fed."""
        self.ends = ends

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

    def idle_before(self, se: ReplayEvent) -> bool:
        """Whether this replayer, about to be fed `se`, holds nothing that depends on its knobs: every
        step passed and dropped (see `forget_finished`) and every row out. Two what-if replayers fed
        the same events (one forked from the other in lockstep) and idle here would then make the
        same decisions from here on under the same knobs."""
        self._expire(se.global_id)
        return not self.steps and not self.queue

    # -- helpers ------------------------------------------------------------------------------
    def _run(self, key: str, stream: str) -> _Run:
        """The run of `key`, read by its run stream's events: dropped once the replay has passed the last
        of them (its steps keep it as long as they need it), so memory stays flat in the store's size."""
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = _Run()
        end = self.ends.get(stream)
        if end is not None and end > self._run_ends.get(key, -1):
            self._run_ends[key] = end
            heapq.heappush(self._expiry, (end, True, key))
        return run

    def _step(self, stream: str) -> _Step:
        st = self.steps.get(stream)
        if st is None:
            prefix = Prefix("", "", inferred_bytes=0, inferred_count=0)
            builder = ContextBuilder(self.knobs, prefix, follow_recorded_compactions=not self.whatif)
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
            if not r._drop and not (r.hard_cap_failure and not r.recorded_chars and not _exceeds(r))
        ]
        self.queue.clear()
        return out

    # -- events -------------------------------------------------------------------------------
    def _expire(self, global_id: int) -> None:
        while self._expiry and self._expiry[0][0] < global_id:
            end, is_run, name = heapq.heappop(self._expiry)
            if not is_run:
                self.steps.pop(name, None)
            elif self._run_ends.get(name) == end:  # else its run stream (or another of its streams) goes on
                del self._run_ends[name]
                self.runs.pop(name, None)

    def feed(self, se: ReplayEvent) -> None:
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
                    if row.whatif and not _exceeds(row):
                        row.note += "; under these knobs the build passes the hard cap"
                elif not _exceeds(row):
                    row._drop = True  # the step failed for another reason
                row._done = True

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
        ev, kind = se, se.kind
        st = self._step(ev.stream_id)
        if isinstance(kind, LlmCallStarted):
            self._on_call(se, st, kind)
        elif isinstance(kind, LlmCallCompleted | LlmCallFailed):
            waiting = self.pending.get(ev.stream_id)
            if waiting:
                row = waiting.popleft()
                if not waiting:  # (a fork copies the streams still waiting, not every stream seen)
                    del self.pending[ev.stream_id]
                if isinstance(kind, LlmCallCompleted) and kind.usage is not None:
                    u = kind.usage
                    row.recorded_input_tokens, row.recorded_output_tokens = u.input_tokens, u.output_tokens
                    row.recorded_cached_tokens = u.cached_input_tokens
                    row.recorded_cache_creation_tokens = u.cache_creation_tokens
                if isinstance(kind, LlmCallCompleted):
                    row.finish_reason, row.done_ts_ns = kind.finish_reason, fast_ts_ns(ev.timestamp)
                row._done = True
            if isinstance(kind, LlmCallCompleted) and not kind.has_tool_calls and ev.source != "compaction":
                step = ev.stream_id.split(STEP_MARK, 1)[1]
                msg = kind.response_message
                text = msg.content if isinstance(msg, AssistantMessage) else None
                if st.run is not None:
                    st.run.outputs[step] = text or ""
        if isinstance(kind, ContextCompacted):
            self.estimate.learn(kind.summary, kind.bytes_saved)
        st.builder.add(se, self.converted)

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

    @staticmethod
    def _track_reuse(st: _Step, row: CallContext) -> None:
        shape = row.rendered.shape if row.rendered is not None else None
        if shape is None:
            return
        row.reuse = PrefixReuse(0, 0, None) if st.prev_shape is None else prefix_reuse(st.prev_shape, shape)
        if row.rendered is not None and not row.rendered.hard_cap_exceeded:
            st.prev_shape = shape  # a build over the hard cap is never sent

    def _await(self, row: CallContext) -> None:
        self.queue.append(row)
        self.pending.setdefault(row.stream_id, deque()).append(row)

    def _infer_prefix(self, st: _Step, kind: LlmCallStarted, memory: list[tuple[str, str]]) -> None:
        b = st.builder
        post = b.last_was_compaction and not self.whatif
        b.set_prefix(Prefix("", "", inferred_bytes=0, inferred_count=0), None)
        rest = b.build(memory, allow_compaction=False, apply_fresh=not post, knobs=self.recorded_knobs)
        cutoff = None
        if rest.message_count >= kind.message_count and st.started_ns is not None:
            # the tail alone is too long: the step must run with `context: {mode: fresh}`
            cutoff = st.started_ns
            b.set_prefix(Prefix("", "", inferred_bytes=0, inferred_count=0), cutoff)
            rest = b.build(memory, allow_compaction=False, apply_fresh=not post, knobs=self.recorded_knobs)
        size = max(0, kind.approx_context_chars - rest.chars)
        count = max(1, kind.message_count - rest.message_count)
        basis = (
            f"the first recorded call of this step run (seq {b.last_seq + 1}: {kind.approx_context_chars} B) "
            f"minus the rest rebuilt ({rest.chars} B)"
        )
        b.set_prefix(Prefix("", "", inferred_bytes=size, inferred_count=count, basis=basis), cutoff)
        st.infer = False

    def compact(self, call: CallContext, builder: ContextBuilder, plan: CompactionPlan) -> Callable[[], CallContext]:
        """The what-if compaction `builder` (this what-if's builder of `call`'s stream, in its state at
        that agent call, kept by the caller) makes at `call`: applied to it; returns the maker of its
        row (the row shows the compaction's request, which the caller may not need yet)."""
        return self._apply_whatif_compaction(
            call.stream_id, call.sequence, call.global_id, call.knobs_source, builder, plan
        )

    def _whatif_compaction(self, stream: str, sequence: int, global_id: int, st: _Step, plan: CompactionPlan) -> None:
        self.queue.append(
            self._apply_whatif_compaction(stream, sequence, global_id, st.knobs_source, st.builder, plan)()
        )

    def _apply_whatif_compaction(
        self,
        stream: str,
        sequence: int,
        global_id: int,
        knobs_source: str,
        b: ContextBuilder,
        plan: CompactionPlan,
    ) -> Callable[[], CallContext]:
        """The compaction a what-if makes, applied to `b`; the maker of its row."""
        rc = b.take_recorded(plan.replaces_seq_range)
        if rc is not None:
            note = f"the recorded compaction (ContextCompacted seq {rc.seq}) of seq {rc.lo}..{rc.hi} applies here"
            b.apply_compaction(plan, rc.summary, rc.reply, reply_seq=rc.reply_seq)
        else:
            est, basis = self.estimate.estimate(plan.span_bytes)
            lo, hi = plan.replaces_seq_range
            text = f"[simulated summary of seq {lo}..{hi}: ~{est} bytes, {basis}]"
            note = f"simulated: no recorded summary covers seq {lo}..{hi}; size ~{est} bytes ({basis})"
            b.apply_compaction(
                plan, text, AssistantMessage(content=text, tool_calls=()), simulated=True, estimated_bytes=est
            )
        return partial(self._compaction_row, stream, sequence, global_id, knobs_source, plan, rc is not None, note)

    def _compaction_row(
        self,
        stream: str,
        sequence: int,
        global_id: int,
        knobs_source: str,
        plan: CompactionPlan,
        recorded: bool,
        note: str,
    ) -> CallContext:
        row = CallContext(
            knobs_source=knobs_source,
            stream_id=stream,
            sequence=sequence,
            global_id=global_id,
            iteration=0,
            is_compaction=True,
            recorded_chars=0,
            recorded_message_count=0,
            recorded_input_tokens=None,
            rendered=compaction_context(plan, self.knobs, simulated=not recorded),
            compaction_plan=plan,
            prefix_inferred=False,
            simulated=not recorded,
            whatif=True,
            note=note,
            _done=True,
        )
        if recorded:
            row.recorded_chars, row.recorded_message_count = plan.request_chars, 2
        return row


def _exceeds(row: CallContext) -> bool:
    return row.rendered is not None and row.rendered.hard_cap_exceeded


async def replay_events(
    reader: EventReader, streams: Sequence[str] | None, kinds: Sequence[str] = REPLAY_KINDS
) -> AsyncGenerator[ReplayEvent, None]:
    """The events a replay reads, in global order: every event of the runs of `streams`, else the
    kinds the context depends on across the store (decoded as `replay_kinds` reads them); `kinds`:
    only some of those kinds are needed (the other kinds may come too, with `streams`)."""
    if streams:
        runs = sorted({run_of(s) for s in streams})
        batches = [await reader.read_stream(r, include_steps=True) for r in runs]
        merged = sorted((se for batch in batches for se in batch), key=lambda se: se.global_id)
        for se in merged:
            yield replay_event(se)
        return
    # only the kinds the context depends on, page by page per kind, merged in global order
    # (decoding is most of a replay's cost; the other kinds are half of a typical store); each kind's
    # next page is read (on the reader's thread or connection) while this one is decoded and replayed
    buffers: dict[str, deque[ReplayEvent]] = {}
    ahead: dict[str, asyncio.Future[RowPage]] = {}

    async def take(tag: str, page: RowPage) -> deque[ReplayEvent]:
        if page.rows_scanned == PAGE:
            ahead[tag] = asyncio.ensure_future(reader.read_rows(page.last_global_id, PAGE, tag=tag))
            await asyncio.sleep(0)  # the read is sent to the reader before this page is decoded
        return _decoded(reader, tag, page)

    try:
        for tag in kinds:
            buffers[tag] = await take(tag, await reader.read_rows(0, PAGE, tag=tag))
        heap = [(buf[0].global_id, tag) for tag, buf in buffers.items() if buf]
        heapq.heapify(heap)
        while heap:
            _, tag = heapq.heappop(heap)
            buf = buffers[tag]
            yield buf.popleft()
            if not buf and tag in ahead:
                buf = buffers[tag] = await take(tag, await ahead.pop(tag))
            if buf:
                heapq.heappush(heap, (buf[0].global_id, tag))
    finally:
        for future in ahead.values():
            future.cancel()


def _decoded(reader: EventReader, tag: str, page: RowPage) -> deque[ReplayEvent]:
    """One page of one kind's rows, decoded (an unreadable row is reported in `reader.problems` and
    skipped)."""
    type_name = TYPE_BY_TAG[tag]
    out: deque[ReplayEvent] = deque()
    for gid, stream_id, seq, data in page.rows:
        try:
            out.append(decode_replay_row(type_name, gid, seq, data))
        except EventDecodeError as e:
            reader.problems.append(BadRow(gid, stream_id, seq, str(e)))
    return out


def agent_knobs(events: Sequence[ReplayEvent], stream_id: str) -> ContextKnobs | None:
    """The recorded knobs of a foreign agent's step (its own policy, docs/telemetry-in.md#recorded-and-what-if),
    None if `stream_id` is not one."""
    run, _, step = stream_id.partition(STEP_MARK)
    for se in events:
        kind = se.kind
        if se.stream_id == run and isinstance(kind, WorkflowNodeStarted) and kind.node_id == step:
            described = self_described(kind)
            if described is not None and described.origin == "otel":
                return described.knobs
    return None


def recorded_knobs(project: Path | None) -> ContextKnobs:
    return project_knobs(read_project(project)) if project is not None else ContextKnobs()


async def stream_ends(reader: EventReader) -> dict[str, int]:
    """Each stream's last global id, as the store holds now."""
    return {s.stream_id: s.last_global_id for s in await reader.streams()}


def make_replayer(project: Path | None, knobs: ContextKnobs | None = None) -> Replayer:
    """A replayer for a store recorded with `project` (knobs=None: the recorded knobs)."""
    return make_replayers(project, [knobs])[0]


def make_replayers(project: Path | None, knobs: Sequence[ContextKnobs | None]) -> list[Replayer]:
    """One replayer per knob set (None: the recorded knobs), the project read once."""
    if project is None:
        return [Replayer(None, ContextKnobs(), k or ContextKnobs(), explicit=k is not None) for k in knobs]
    read = read_project(project)
    recorded, prefixes = project_knobs(read), ProjectPrefixes(read)
    return [Replayer(prefixes, recorded, k or recorded, explicit=k is not None) for k in knobs]


async def replay_store(
    reader: EventReader,
    *,
    project: Path | None,
    knobs: ContextKnobs | None = None,
    streams: Sequence[str] | None = None,
) -> AsyncIterator[CallContext]:
    """Every LLM call (and failed build) in store order, of the store as it was when the replay began
    (later events are not read). knobs=None: the recorded knobs."""
    async for _, row in replay_many(reader, project=project, knobs=[knobs], streams=streams):
        yield row


async def replay_many(
    reader: EventReader,
    *,
    project: Path | None,
    knobs: Sequence[ContextKnobs | None],
    streams: Sequence[str] | None = None,
    figures_only: bool = False,
    events: AsyncGenerator[ReplayEvent, None] | None = None,
) -> AsyncIterator[tuple[int, CallContext]]:
    """`replay_store` under several knob sets in one pass: each event is read and decoded once
    and fed to one replayer per knob set (None = the recorded knobs). Yields (knob set index, row).

    `figures_only`: the caller reads only a row's figures (`compare.call_figures`, with its own soft
    cap), not its knobs or messages: what-if knob sets that differ only in soft_cap_chars are then
    replayed by one replayer for as long as every build falls on the same side of all their soft caps
    (they make the same decisions), and share its rows; a set is forked off (`Replayer.fork`) just
    before the first build that would decide otherwise for it, and joins its family's replayer again
    once both are idle (`Replayer.idle_before`: between runs, when every step has been dropped).

    `events`: the events `replay_events(reader, streams)` gives, already decoded (`advise` replays the
    events of its first pass again, not decoding them twice)."""
    replayers = make_replayers(project, knobs)
    if len(replayers) > 1:  # each event's message converted once for every knob set
        shared = Converted(keep_all=False)
        for replayer in replayers:
            replayer.converted = shared
    ends = await stream_ends(reader)
    for replayer in replayers:
        replayer.forget_finished(ends)
    groups = _groups(replayers) if figures_only else [_Group(r, [i], i) for i, r in enumerate(replayers)]
    families = len(groups)
    top = max(ends.values(), default=0)
    wanted = set(streams) if streams else None
    source = replay_events(reader, streams) if events is None else events
    async with aclosing(source) as decoded:  # its read-ahead stopped on a break
        async for se in decoded:
            if se.global_id > top:
                break
            if len(groups) > families and STEP_MARK not in se.stream_id:
                groups = _rejoined(groups, se)
            for group in groups:  # a group split off here is appended, so fed this event too
                if len(group.members) > 1:
                    groups += group.split_before(se, replayers)
                group.replayer.feed(se)
                for row in group.replayer.ready():
                    if wanted is None or row.stream_id in wanted:
                        for i in group.members:
                            yield i, row
    for group in groups:
        for row in group.replayer.flush():
            if wanted is None or row.stream_id in wanted:
                for i in group.members:
                    yield i, row


@dataclass
class _Group:
    """Knob sets (`members`, indices) replayed by one replayer, which runs under the knobs of one of them."""

    replayer: Replayer
    members: list[int]
    family: object  # the groups of one family differ only in their members' soft caps

    def split_before(self, se: ReplayEvent, replayers: list[Replayer]) -> list[_Group]:
        """Fork off the members whose soft cap puts the build `se` is about to make on the other side
        of it than the replayer's own: the new group starts from the state before `se` and also
        delivers the rows made so far that are not yet out (they are the same for all members)."""
        chars = self.replayer.next_build_chars(se)
        if chars is None:
            return []
        over = chars > self.replayer.knobs.soft_cap_chars
        other = [i for i in self.members if (chars > replayers[i].knobs.soft_cap_chars) != over]
        if not other:
            return []
        self.members = [i for i in self.members if i not in other]
        fork = self.replayer.fork(replayers[other[0]].knobs, lockstep=True)
        fork.queue = deque(self.replayer.queue)
        return [_Group(fork, other, self.family)]


def _groups(replayers: list[Replayer]) -> list[_Group]:
    """What-if replayers whose knobs differ only in soft_cap_chars start as one group; others alone."""
    groups: dict[object, _Group] = {}
    for i, r in enumerate(replayers):
        k = r.knobs
        key = (k.observation_window, k.forget_after_turns, k.min_tail_turns, k.hard_cap_chars) if r.whatif else i
        if key in groups:
            groups[key].members.append(i)
        else:
            groups[key] = _Group(r, [i], key)
    return list(groups.values())


def _rejoined(groups: list[_Group], se: ReplayEvent) -> list[_Group]:
    """`groups` with the groups of one family that are idle before `se` joined into the first of them."""
    first: dict[object, _Group] = {}
    out = []
    for group in groups:
        joined = first.get(group.family)
        if joined is not None and group.replayer.idle_before(se):
            joined.members = sorted(joined.members + group.members)
            continue
        if joined is None and group.replayer.idle_before(se):
            first[group.family] = group
        out.append(group)
    return out


async def context_at(
    reader: EventReader,
    stream_id: str,
    sequence: int,
    *,
    project: Path | None,
    knobs: ContextKnobs | None = None,
) -> CallContext:
    """One call's context (the LlmCallStarted at `sequence` on `stream_id`)."""
    call, _ = await context_with_previous(reader, stream_id, sequence, project=project, knobs=knobs)
    return call


async def context_with_previous(
    reader: EventReader,
    stream_id: str,
    sequence: int,
    *,
    project: Path | None,
    knobs: ContextKnobs | None = None,
) -> tuple[CallContext, CallContext | None]:
    """One call's context, and the stream's agent call before it (None: the first)."""
    known = {s.stream_id for s in await reader.streams()}
    if stream_id not in known:
        sample = ", ".join(sorted(s for s in known if STEP_MARK in s)[:5])
        raise ReplayError(f"unknown stream {stream_id!r}; step streams with LLM calls include: {sample}")
    seen: list[int] = []
    previous: CallContext | None = None
    compaction: CallContext | None = None  # a what-if compaction made just before the call at `sequence`
    async for row in replay_store(reader, project=project, knobs=knobs, streams=[stream_id]):
        if row.sequence == sequence and not row.hard_cap_failure:
            if not (row.whatif and row.is_compaction):
                return row, previous
            compaction = compaction or row
        if not row.simulated:
            seen.append(row.sequence)
        if not row.is_compaction and not row.hard_cap_failure and row.rendered is not None:
            previous = row
    if compaction is not None:
        return compaction, previous
    calls = ", ".join(str(s) for s in seen[:20]) + (" ..." if len(seen) > 20 else "")
    raise ReplayError(f"no LLM call at {stream_id} seq {sequence}; its LlmCallStarted sequences are: {calls}")
