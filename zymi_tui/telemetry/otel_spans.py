"""A store's runs as OpenTelemetry GenAI traces (semantic conventions for GenAI agent and model spans).

One trace per run: an `invoke_workflow {pipeline}` root span; an `invoke_agent {agent}` span per step;
under it a `chat {model}` client span per LLM call (a compaction call too: it is made inside the
step, and carries `zymi.compaction`) and an `execute_tool {tool}` span per `ToolCallCompleted`.
Each span is made when the event that ends it is fed (a call's when its replayed row is out), so
spans stream out as the store is read. Content (`gen_ai.input.messages`, ...) is left out with
`content=False`; our context figures are under `zymi.*`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zymi_tui.context.event_items import fast_ts_ns
from zymi_tui.events.kinds import LlmCallCompleted, LlmCallFailed, LlmCallStarted, ToolCallCompleted
from zymi_tui.events.messages import AssistantMessage, MessageModel
from zymi_tui.events.messages import TokenUsage as Usage
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.export_calls import Ended, Run, RunTracker, Step, hex_id
from zymi_tui.telemetry.otel_content import as_json, message_json, message_texts, output_json
from zymi_tui.telemetry.otel_rows import Bodies, CallFacts, RowFacts, figure_attrs
from zymi_tui.telemetry.otlp_wire import CLIENT, INTERNAL, AttrValue, SpanData, make_span

ANSWERS_KEPT = 256  # answers awaiting the call that sends them (one per open step stream, most often)


@dataclass(frozen=True)
class TraceOptions:
    model: str  # the project's model (a call's body names its own)
    provider: str  # gen_ai.provider.name: "openai" | "anthropic" | ...
    content: bool = True  # prompts, answers, tool arguments and results on the spans


@dataclass
class _Call:
    """An LLM call started, waiting for its completion and its replayed row."""

    run: Run
    step: Step
    stream: str
    sequence: int
    iteration: int
    compaction: bool
    start_ns: int
    end_ns: int | None = None
    response: MessageModel | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None


@dataclass
class TraceBuilder:
    """`feed` every event in global order with the rows it completed; each returns the spans it ended."""

    options: TraceOptions
    bodies: Bodies
    tracker: RunTracker = field(default_factory=RunTracker)
    calls: dict[tuple[str, int], _Call] = field(default_factory=dict)
    waiting: dict[str, deque[_Call]] = field(default_factory=dict)  # per step stream, awaiting completion
    tool_calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # call id -> (tool, arguments)
    rows: RowFacts = field(init=False)
    step_ended: Callable[[str], None] | None = None  # told each step stream whose step ended (None: `rows`)
    # answers written as output, by value, with their `message_json`: the step's next call sends each again
    answered: dict[MessageModel, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rows = RowFacts(self.bodies, self.options.content, self.input_texts)
        if self.step_ended is None:
            self.step_ended = self.rows.forget

    def input_texts(self, m: MessageModel) -> tuple[str, bytes]:
        return message_texts(m, self.answered.pop(m, None) if self.answered else None)

    def _output(self, call: _Call) -> str | None:
        """`gen_ai.output.messages`; the answer's text is kept for the call that sends it again."""
        if call.response is None:
            return None
        text = message_json(call.response)
        if len(self.answered) >= ANSWERS_KEPT:
            self.answered.clear()
        self.answered[call.response] = text
        return output_json(call.response, call.finish_reason, text)

    def holds_nothing_open(self) -> bool:
        """No run, step, call or tool call is open: the spans of the events after this are what a new
        builder makes of them (what is kept besides, the texts, is kept by value, and the windows by step
        stream). A store cut where no stream crosses is then exported in parts (commands/otel_pair.py)."""
        t = self.tracker
        return not (self.calls or self.waiting or self.tool_calls or t.runs or t.steps)

    def feed(self, se: ReplayEvent | None, rows: list[CallContext]) -> list[SpanData]:
        if not rows:  # (most events complete no call)
            return self.feed_facts(se, [])
        facts = self.rows.facts
        return self.feed_facts(se, [facts(row) for row in rows if not row.hard_cap_failure])

    def feed_facts(self, se: ReplayEvent | None, calls: list[CallFacts]) -> list[SpanData]:
        """`feed`, each replayed call given by its `CallFacts` (made by `RowFacts`, here or elsewhere)."""
        out: list[SpanData] = []
        ended = None
        if se is not None:
            ts = fast_ts_ns(se.timestamp)
            if STEP_MARK in se.stream_id:
                span = self._step_event(se, ts)
                if span is not None:
                    out.append(span)
            ended = self.tracker.feed(se, ts)
        for facts in calls:
            call = self.calls.pop((facts.stream, facts.sequence), None)
            if call is not None:
                out.append(self._chat(call, facts))
        if ended is not None:
            out.append(self._ended(ended))
        if se is None:
            out += self._rest()
        return out

    # -- events on a step stream ------------------------------------------------------------------
    def _step_event(self, se: ReplayEvent, ts: int) -> SpanData | None:
        kind = se.kind
        if isinstance(kind, LlmCallStarted):
            step = self.tracker.step_of(se)
            compaction = kind.iteration == 0 or se.source == "compaction"
            call = _Call(step.run, step, se.stream_id, se.sequence, kind.iteration, compaction, ts)
            self.calls[(se.stream_id, se.sequence)] = call
            self.waiting.setdefault(se.stream_id, deque()).append(call)
        elif isinstance(kind, LlmCallCompleted | LlmCallFailed):
            queue = self.waiting.get(se.stream_id)
            if queue:
                call = queue.popleft()
                if not queue:
                    del self.waiting[se.stream_id]
                call.end_ns = ts
                if isinstance(kind, LlmCallFailed):
                    call.error = kind.error
                else:
                    call.response, call.finish_reason = kind.response_message, kind.finish_reason
                    call.usage = kind.usage
                    if isinstance(kind.response_message, AssistantMessage):
                        for c in kind.response_message.tool_calls:
                            self.tool_calls[c.id] = (c.name, c.arguments)
        elif isinstance(kind, ToolCallCompleted):
            return self._tool(se, kind, ts)
        return None

    def _tool(self, se: ReplayEvent, kind: ToolCallCompleted, ts: int) -> SpanData:
        step = self.tracker.step_of(se)
        name, arguments = self.tool_calls.pop(kind.call_id, ("unknown", ""))
        content = self.options.content
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": kind.call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": step.run.stream,
            "gen_ai.tool.call.arguments": arguments if content else None,
            "gen_ai.tool.call.result": kind.result if content else None,
            "error.type": "tool_error" if kind.is_error else None,
            "openinference.span.kind": "TOOL",
            "zymi.stream_id": se.stream_id,
            "zymi.sequence": se.sequence,
            "zymi.tool.duration_ms": kind.duration_ms,
            "zymi.tool.result_bytes": _utf8_length(kind.result),
        }
        return make_span(
            trace_id=step.run.trace_id,
            span_id=hex_id(f"tool|{se.stream_id}|{se.sequence}|{kind.call_id}", 16),
            parent_id=step.span_id,
            name=f"execute_tool {name}",
            kind=INTERNAL,
            start_ns=ts - kind.duration_ms * 1_000_000,
            end_ns=ts,
            attrs=attrs,
            error=kind.result_preview if kind.is_error else None,
        )

    # -- LLM calls ----------------------------------------------------------------------------------
    def _chat(self, call: _Call, facts: CallFacts | None) -> SpanData:
        model = str(facts.model or self.options.model) if facts is not None else self.options.model
        u = call.usage
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.options.provider,
            "gen_ai.request.model": model,
            "gen_ai.request.temperature": _float(facts.temperature) if facts is not None else None,
            "gen_ai.request.max_tokens": _int(facts.max_tokens) if facts is not None else None,
            "gen_ai.conversation.id": call.run.stream,
            "gen_ai.response.finish_reasons": [call.finish_reason] if call.finish_reason else None,
            "gen_ai.usage.input_tokens": u.input_tokens if u else None,
            "gen_ai.usage.output_tokens": u.output_tokens if u else None,
            "gen_ai.usage.cache_read.input_tokens": u.cached_input_tokens if u else None,
            "gen_ai.usage.cache_creation.input_tokens": u.cache_creation_tokens if u else None,
            "openinference.span.kind": "LLM",
        }
        if self.options.content:
            if facts is not None:
                attrs["gen_ai.system_instructions"] = facts.system
                attrs["gen_ai.input.messages"] = facts.inputs
                attrs["gen_ai.tool.definitions"] = facts.tools
            attrs["gen_ai.output.messages"] = self._output(call)
        _figures(attrs, call, facts)
        return make_span(
            trace_id=call.run.trace_id,
            span_id=hex_id(f"call|{call.stream}|{call.sequence}", 16),
            parent_id=call.step.span_id,
            name=f"chat {model}",
            kind=CLIENT,
            start_ns=call.start_ns,
            end_ns=call.end_ns if call.end_ns is not None else call.start_ns,
            attrs=attrs,
            error=call.error,
        )

    # -- steps and runs -----------------------------------------------------------------------------
    def _ended(self, ended: Ended, *, incomplete: bool = False) -> SpanData:
        if ended.step is not None:
            self.step_ended(ended.step.stream)  # type: ignore[misc]  # (set by __post_init__)
            return self._step_span(ended.step, ended.ok, incomplete)
        assert ended.run is not None
        return self._run_span(ended.run, ended.ok, ended.error, incomplete)

    def _step_span(self, step: Step, ok: bool, incomplete: bool) -> SpanData:
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": step.agent,
            "gen_ai.provider.name": self.options.provider,
            "gen_ai.conversation.id": step.run.stream,
            "openinference.span.kind": "AGENT",
            "zymi.stream_id": step.stream,
            "zymi.step": step.node_id,
            "zymi.incomplete": True if incomplete else None,
        }
        return make_span(
            trace_id=step.run.trace_id,
            span_id=step.span_id,
            parent_id=step.run.span_id,
            name=f"invoke_agent {step.agent}",
            kind=INTERNAL,
            start_ns=step.start_ns,
            end_ns=step.end_ns,
            attrs=attrs,
            error=None if ok else f"step {step.node_id} failed",
        )

    def _run_span(self, run: Run, ok: bool, error: str | None, incomplete: bool) -> SpanData:
        name = run.pipeline or run.stream
        user = run.user_message if self.options.content and run.user_message is not None else None
        attrs: dict[str, AttrValue] = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.agent.name": name,
            "gen_ai.conversation.id": run.stream,
            "gen_ai.input.messages": None
            if user is None
            else as_json([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
            "openinference.span.kind": "CHAIN",
            "zymi.stream_id": run.stream,
            "zymi.correlation_id": run.correlation_id,
            "zymi.nested": True if run.nested else None,
            "zymi.incomplete": True if incomplete else None,
        }
        return make_span(
            trace_id=run.trace_id,
            span_id=run.span_id,
            parent_id=None,
            name=f"invoke_workflow {name}",
            kind=INTERNAL,
            start_ns=run.start_ns,
            end_ns=run.end_ns,
            attrs=attrs,
            error=None if ok else (error or "the run failed"),
        )

    def _rest(self) -> list[SpanData]:
        """At the end of the store: the calls, steps and runs nothing closed."""
        out = [self._chat(call, None) for call in self.calls.values()]
        self.calls.clear()
        steps, runs = self.tracker.still_open()
        out += [self._step_span(s, True, True) for s in steps]
        out += [self._run_span(r, True, None, True) for r in runs]
        return out


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _utf8_length(text: str) -> int:
    """`len(text.encode())` (an ASCII text, told in constant time, is its length)."""
    return len(text) if text.isascii() else len(text.encode())


def _figures(attrs: dict[str, AttrValue], call: _Call, facts: CallFacts | None) -> None:
    """Our context figures, added to `attrs`: the recorded size, the rebuilt context's layers, the
    prefix kept from the step's previous call."""
    attrs["zymi.stream_id"] = call.stream
    attrs["zymi.sequence"] = call.sequence
    attrs["zymi.iteration"] = call.iteration
    attrs["zymi.compaction"] = call.compaction
    attrs["zymi.step"] = call.step.node_id
    if facts is not None and facts.figures is not None:
        figure_attrs(attrs, facts.figures)
