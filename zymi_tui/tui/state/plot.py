"""What the context plot draws: approx_context_chars per LLM call, per step, with caps and markers.

Pure: no widgets, no IO. x is the agent-call index within its step (1, 2, ...) or seconds since
the run started; compaction calls (iteration 0) are drawn as markers, not as points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from zymi_tui.events.kind_json import CONTEXT_COMPACTED, LLM_CALL_COMPLETED, read_kind
from zymi_tui.events.kinds import LlmCallStarted
from zymi_tui.events.row_envelope import LeanError, payload, run_envelope
from zymi_tui.events.store import RawRow, step_of
from zymi_tui.events.stored import BadRow, StoredEvent
from zymi_tui.events.timestamps import parse_timestamp_ns
from zymi_tui.tui.state.call_columns import CallColumns, CallPoint, read_in_place
from zymi_tui.tui.state.events import RUN_GROUP
from zymi_tui.tui.state.node_states import NodeStates

__all__ = ["CallCollector", "CallColumns", "CallPoint", "StepCalls"]


@dataclass(slots=True)
class StepCalls:
    step: str
    calls: CallColumns = field(default_factory=CallColumns)
    compactions: list[tuple[float, int, int]] = field(default_factory=list)  # (x index, global id, bytes_saved)
    masking_from: int | None = None  # first call index at which masking starts (None: never)
    masking_exact: bool = False  # True when it comes from the rebuilt context, False when estimated
    forgetting_from: int | None = None  # first call index at which forget_after_turns drops turns (estimated)


WORKFLOW_TAGS = frozenset({"workflow_node_started", "workflow_node_completed", "step_skipped"})  # what the graph reads
_WORKFLOW_TYPES = frozenset({"WorkflowNodeStarted", "WorkflowNodeCompleted", "StepSkipped"})  # the same, by type
PLOT_TAGS = frozenset({"llm_call_started", "llm_call_completed", "context_compacted"})  # what the plot reads


class CallCollector:
    """Fed a run's events in global order (a page at a time, or live), keeps only what the plot and the
    graph draw: per step every agent LLM call and every compaction, and the steps' states (`NodeStates`).
    O(calls), not O(events): a long run's pages are fed in a worker and dropped.

    Where masking and forgetting start is estimated from the knobs: masking once more tool turns than
    the window are in the history, forgetting once more assistant turns than `forget_after_turns`.
    """

    def __init__(self, window: int | None = None, forget_after: int | None = None) -> None:
        self.window, self.forget_after = window, forget_after
        self.steps: dict[str, StepCalls] = {}
        self.nodes = NodeStates()  # what the graph reads of the workflow events (not the events)
        self.t0: int | None = None  # the first event's timestamp (x = seconds since the run started)
        self.last_gid = 0
        self._pending: dict[str, tuple[StepCalls, int]] = {}  # stream -> started call (its step, its index)
        self._tool_turns: dict[str, int] = {}
        self._turns: dict[str, int] = {}

    def snapshot(self) -> CallCollector:
        """A copy to hand to another thread while this one is still fed (the calls' columns are shared: each
        step's calls so far, a fixed-length view; the other thread reads them)."""
        copy = CallCollector(self.window, self.forget_after)
        copy.steps = {name: replace(sc, calls=sc.calls.prefix(), compactions=list(sc.compactions))
                      for name, sc in self.steps.items()}  # fmt: skip
        copy.nodes, copy.t0, copy.last_gid = self.nodes.copy(), self.t0, self.last_gid
        return copy

    def feed(self, events: Iterable[StoredEvent]) -> None:
        """Decoded events (a small run's, or live ones)."""
        # the event readers load with the first decoded event, not with the dashboard's first frame
        from zymi_tui.events import kinds as k

        for se in events:
            ev, d = se.event, se.event.kind
            self._seen(se.global_id, ev.timestamp_ns)
            if isinstance(d, k.LlmCallStarted):
                self._started(se.global_id, ev.stream_id, ev.sequence, ev.timestamp_ns, d.iteration, d.message_count,
                              d.approx_context_chars)  # fmt: skip
            elif isinstance(d, k.LlmCallCompleted):
                self._completed(ev.stream_id, d.usage.input_tokens if d.usage else None, d.has_tool_calls)
            elif isinstance(d, k.ContextCompacted):
                self._compacted(se.global_id, ev.stream_id, d.bytes_saved)
            elif ev.tag in WORKFLOW_TAGS:
                self.nodes.feed(d)

    def feed_rows(self, rows: Iterable[RawRow]) -> list[BadRow]:
        """Rows as stored (a long run's pages): of a call or a compaction only the fields drawn are decoded
        (`row_envelope`), a workflow event whole (folded into `nodes`, not kept). Returns the rows that could not
        be read (left out)."""
        from zymi_tui.events.envelope import EventDecodeError, decode_event

        bad: list[BadRow] = []
        for gid, stream_id, seq, data in rows:
            try:
                env = run_envelope(data)
                kind, ns = env.kind.type, parse_timestamp_ns(env.timestamp)
                node = decode_event(data, seq).kind if kind in _WORKFLOW_TYPES else None
                self._seen(gid, ns)
                if kind == "LlmCallStarted":
                    d = read_kind(env)
                    assert isinstance(d, LlmCallStarted)
                    self._started(gid, env.stream_id, seq, ns, d.iteration, d.message_count, d.approx_context_chars)
                elif kind == "LlmCallCompleted":
                    c = payload(env, LLM_CALL_COMPLETED)
                    self._completed(env.stream_id, c.usage.input_tokens if c.usage else None, c.has_tool_calls)
                elif kind == "ContextCompacted":
                    self._compacted(gid, env.stream_id, payload(env, CONTEXT_COMPACTED).bytes_saved)
                elif node is not None:
                    self.nodes.feed(node)
            except (LeanError, EventDecodeError, ValueError) as e:
                bad.append(BadRow(gid, stream_id, seq, str(e)))
        return bad

    def _seen(self, gid: int, ns: int) -> None:
        if self.t0 is None:
            self.t0 = ns
        self.last_gid = max(self.last_gid, gid)

    def _started(self, gid: int, stream: str, seq: int, ns: int, iteration: int, messages: int, chars: int) -> None:
        step = step_of(stream) or RUN_GROUP
        sc = self.steps.setdefault(step, StepCalls(step))
        if iteration == 0:  # a compaction's own call: a marker, not a point
            self._pending.pop(stream, None)
            return
        index = sc.calls.append(ns, chars, messages, iteration, gid, stream, seq)
        self._pending[stream] = (sc, index)
        if self.window is not None and sc.masking_from is None and self._tool_turns.get(step, 0) > self.window:
            sc.masking_from = index
        if (self.forget_after is not None and sc.forgetting_from is None
                and self._turns.get(step, 0) > self.forget_after):  # fmt: skip
            sc.forgetting_from = index

    def _completed(self, stream: str, tokens: int | None, tool_calls: bool) -> None:
        started = self._pending.pop(stream, None)
        if started is None:
            return
        sc, index = started
        sc.calls.set_tokens(index, tokens)
        step = sc.step
        self._turns[step] = self._turns.get(step, 0) + 1
        if tool_calls:
            self._tool_turns[step] = self._tool_turns.get(step, 0) + 1

    def _compacted(self, gid: int, stream: str, saved: int) -> None:
        step = step_of(stream) or RUN_GROUP
        sc = self.steps.setdefault(step, StepCalls(step))
        sc.compactions.append((len(sc.calls) + 0.5, gid, saved))


def collect_calls(
    events: Iterable[StoredEvent], window: int | None = None, forget_after: int | None = None
) -> dict[str, StepCalls]:
    """Per step (RUN_GROUP for calls on the run stream), every agent LLM call and every compaction."""
    collector = CallCollector(window, forget_after)
    collector.feed(events)
    return collector.steps


def picked(n: int, y: Callable[[int], float], max_points: int) -> list[int]:
    """Which of n points (by place) to draw, at most ~max_points: all of them, or the lowest and the highest
    `y` of each bucket, in place order (spikes and drops survive)."""
    if n <= max_points or max_points < 4:
        return list(range(n))
    buckets = max_points // 2
    out: list[int] = []
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        if lo >= hi:
            continue
        seg = range(lo, hi)
        out.extend(sorted({min(seg, key=y), max(seg, key=y)}))
    return out


def downsample(xs: Sequence[float], ys: Sequence[float], max_points: int) -> tuple[list[float], list[float]]:
    """At most ~max_points points (`picked`)."""
    keep = picked(len(xs), ys.__getitem__, max_points)
    return [xs[i] for i in keep], [ys[i] for i in keep]


def x_at(calls: CallColumns, i: int, by_time: bool, t0_ns: int) -> float:
    """Where call i (from 0) is drawn: seconds since the run started, or its index (from 1)."""
    return (calls.ns[i] - t0_ns) / 1e9 if by_time else float(i + 1)


@dataclass(frozen=True, slots=True)
class Curve:
    """A step's calls as drawn: their chars and known input tokens, downsampled, and the span of all of them."""

    xs: list[float]
    ys: list[float]
    token_xs: list[float]
    token_ys: list[float]
    x_lo: float
    x_hi: float
    top: float  # the most chars


def curve(calls: CallColumns, by_time: bool, t0_ns: int, max_points: int) -> Curve:
    """`calls` downsampled to `max_points` points per series, read from the columns in place: no number is made
    for a call not drawn (a long run's 149,425 calls as float lists and arrays: ~10 MB at every redraw, the
    dashboard's peak RSS at a million events, issue 34). `calls` is not empty."""
    n = len(calls)
    chars, tokens = read_in_place(calls.chars), read_in_place(calls.tokens)
    keep = picked(n, lambda i: float(chars[i]), max_points)
    known = calls.known_tokens()
    token_keep = picked(len(known), lambda j: float(tokens[known[j]]), max_points)
    if by_time:  # (seconds grow with the time: the span's ends are the earliest and the latest call's)
        x_lo, x_hi = ((min(calls.ns) - t0_ns) / 1e9, (max(calls.ns) - t0_ns) / 1e9)
    else:
        x_lo, x_hi = 1.0, float(n)
    return Curve([x_at(calls, i, by_time, t0_ns) for i in keep], [float(chars[i]) for i in keep],
                 [x_at(calls, known[j], by_time, t0_ns) for j in token_keep],
                 [float(tokens[known[j]]) for j in token_keep], x_lo, x_hi, float(max(calls.chars)))  # fmt: skip


def human(n: float) -> str:
    """An axis figure a person reads at a glance: 950, 12.5k, 1.2M (no trailing .0)."""
    a = abs(n)
    if a < 1000:
        text = f"{n:.0f}"
    elif a < 1_000_000:
        text = f"{n / 1000:.1f}".removesuffix(".0") + "k"
    else:
        text = f"{n / 1_000_000:.1f}".removesuffix(".0") + "M"
    return text


def nice_step(span: float, max_ticks: int) -> float:
    """The smallest 1-2-5 x 10^k step that puts at most `max_ticks` intervals in `span`."""
    if span <= 0:
        return 1.0
    step = 10.0 ** math.floor(math.log10(span / max(max_ticks, 1)))
    for m in (1.0, 2.0, 5.0, 10.0):
        if span / (step * m) <= max_ticks:
            return float(step * m)
    return float(step * 10)


def y_ticks(top: float, max_ticks: int) -> list[float]:
    """0, step, 2 step, ... up to `top` (never above it): the finest 1-2-5 step that puts at most `max_ticks`
    ticks above 0, and at least one (a step above `top` labels the axis "0" only: 4.2k at most 2 ticks is
    0, 2k, 4k, not 0 and 5k cut off)."""
    if top <= 0:
        return [0.0]
    exponent = math.floor(math.log10(top))
    steps = [m * 10.0**e for e in range(exponent - 2, exponent + 1) for m in (1.0, 2.0, 5.0)]
    fitting = [s for s in steps if s <= top]
    step = next((s for s in fitting if top // s <= max_ticks), fitting[-1])
    return [i * step for i in range(int(top // step) + 1)]


def x_ticks(lo: float, hi: float, max_ticks: int, *, integer: bool) -> list[float]:
    """Ticks between lo and hi: whole numbers for call indexes (first and last call always among them)."""
    step = nice_step(hi - lo, max_ticks)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step) * step
    ticks = [first + i * step for i in range(int((hi - first) // step) + 1)]
    if integer:
        ticks = sorted({*(float(round(t)) for t in ticks), float(round(lo)), float(round(hi))})
        min_gap = step / 2
        ticks = [t for i, t in enumerate(ticks) if i in (0, len(ticks) - 1) or (t - ticks[0] >= min_gap and
                                                                               ticks[-1] - t >= min_gap)]  # fmt: skip
    return ticks


def seconds_label(s: float) -> str:
    return f"{s:.0f}s" if s < 120 else f"{int(s // 60)}m{int(s % 60):02d}"
