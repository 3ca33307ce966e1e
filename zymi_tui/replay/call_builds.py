"""What a store replay keeps per run and per step stream, and what it does to a step's builder besides
feeding it events: Layer A inferred at a step run's first call, the prefix reuse between sent calls, and
the compaction a what-if makes (the recorded one where it covers the same range, else a simulated
summary of estimated size). `calls.Replayer` is the state machine that uses them."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.rendered import CompactionPlan, Prefix, Shape
from zymi_tui.context.reuse import PrefixReuse, head_figures, prefix_reuse
from zymi_tui.events.kinds import LlmCallStarted
from zymi_tui.events.messages import AssistantMessage
from zymi_tui.replay.call_context import UNKNOWN_KNOBS, CallContext
from zymi_tui.replay.simulated import SummaryEstimate, compaction_context


@dataclass
class RunState:
    """A run as the replay keeps it: its pipeline, inputs, memory, step outputs and failure rows."""

    pipeline: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    memory: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    failure_rows: list[CallContext] = field(default_factory=list)


@dataclass
class StepState:
    """A step stream as the replay keeps it: its builder and what its next agent call needs."""

    builder: ContextBuilder
    run: RunState | None = None
    infer: bool = False  # Layer A is to be inferred at the next agent call
    prev_shape: Shape | None = None  # the previous sent agent call's context (prefix reuse)
    # the Layer A and memory of `prev_shape` and `head_figures` of them (its calls' share them, mostly)
    head: tuple[Prefix, tuple[tuple[str, str], ...], tuple[int, int]] | None = None
    knobs_source: str = UNKNOWN_KNOBS  # where this step run's recorded knobs come from
    started_ns: int | None = None  # this run's WorkflowNodeStarted (the fresh cutoff, docs/context.md#fresh-mode)
    whatif: bool = False  # a foreign agent's step under knobs asked for explicitly (not its own policy)


class StepBuilds:
    """The replayer's work on a step's builder other than feeding it (`calls.Replayer` inherits it)."""

    knobs: ContextKnobs
    recorded_knobs: ContextKnobs
    whatif: bool
    estimate: SummaryEstimate
    queue: deque[CallContext]
    name_reuse: bool = True  # a prefix break's cause worked out (`prefix_reuse(named=...)`)

    def _track_reuse(self, st: StepState, row: CallContext) -> None:
        """`row.reuse` from the step's previous sent call. Its Layer A and memory, when they are this
        call's, are counted once (`head_figures`, kept in `st.head`) rather than compared message by
        message: the same figures. `name_reuse=False`: a break's cause is not worked out."""
        shape = row.rendered.shape if row.rendered is not None else None
        if shape is None:
            return
        prev = st.prev_shape
        if prev is None:
            row.reuse = PrefixReuse(0, 0, None)
        elif prev.prefix == shape.prefix and prev.memory == shape.memory:
            head = st.head
            if head is None or head[0] != shape.prefix or head[1] != shape.memory:
                head = st.head = (shape.prefix, shape.memory, head_figures(shape))
            row.reuse = prefix_reuse(prev, shape, head[2], named=self.name_reuse)
        else:
            row.reuse = prefix_reuse(prev, shape, named=self.name_reuse)
        if row.rendered is not None and not row.rendered.hard_cap_exceeded:
            st.prev_shape = shape  # a build over the hard cap is never sent

    def _infer_prefix(self, st: StepState, kind: LlmCallStarted, memory: list[tuple[str, str]]) -> None:
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

    def _whatif_compaction(
        self, stream: str, sequence: int, global_id: int, st: StepState, plan: CompactionPlan
    ) -> None:
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
