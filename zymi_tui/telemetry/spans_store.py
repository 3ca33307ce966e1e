"""Spans into a zymi store, as they arrive (docs/telemetry-in.md#mapping).

A trace (or every trace of one `gen_ai.conversation.id`) is a run stream; the model calls under one
agent span are a step sub-stream `<run>:step:<agent>`; each model call becomes `LlmCallStarted` (its
input as sent: `message_count`, `approx_context_chars` counted as zymi counts them) and
`LlmCallCompleted`; each tool result the agent sent back becomes `ToolCallCompleted`; the first call's
system and user messages are Layer A, recorded on the step's `WorkflowNodeStarted` with the agent's own
policy as the recorded knobs ("nothing masked, nothing dropped"). Events are appended with the store's
own writer, so the hash chain is zymi's.

Each call's input is compared with what the store will rebuild for it (Layer A + every answer and
tool result recorded so far): an agent that only appends gets exactly its input back from a replay;
one that dropped or rewrote messages is marked (`history: rewritten`) and counted.
"""

from __future__ import annotations

import uuid
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.masking import message_bytes
from zymi_tui.events.kinds import (
    Event,
    EventData,
    LlmCallCompleted,
    LlmCallStarted,
    PipelineCompleted,
    PipelineRequested,
    ToolCallCompleted,
    ToolCallRequested,
    UserMessageReceived,
    WorkflowCompleted,
    WorkflowNodeCompleted,
    WorkflowNodeStarted,
    WorkflowStarted,
)
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolCallInfo,
    ToolResultMessage,
    UserMessage,
)
from zymi_tui.events.store import EventReader, EventWriter
from zymi_tui.telemetry.messages_in import CallContent, call_content, tool_result
from zymi_tui.telemetry.spans_in import AGENT, CHAT, TOOL, InSpan

SOURCE = "otel"
ORIGIN = "otel"  # the `origin` of the `zymi_tui` extra field: these calls were made by a foreign agent
# the recorded knobs of a foreign agent's step: its own policy sent every message it kept, so the
# replay under them masks, drops and compacts nothing
AGENT_OWN_KNOBS = ContextKnobs(
    observation_window=1_000_000, soft_cap_chars=10**15, hard_cap_chars=10**15, min_tail_turns=0
)
APPEND_ONLY, REWRITTEN = "append-only", "rewritten"
SEEN_SPANS_KEPT = 100_000  # span ids remembered to drop an exporter's retried batch
TOOL_SPANS_KEPT = 10_000  # tool spans (by call id) and agent names (by span id) remembered, each


def preview(text: str | None, limit: int = 100) -> str | None:
    """The first `limit` UTF-8 bytes, on a character boundary (zymi's content_preview)."""
    if not text:
        return None
    return text.encode()[:limit].decode("utf-8", "ignore")


def same(a: MessageModel, b: MessageModel) -> bool:
    """The same message as far as the context is concerned (tool-call ids, not argument spelling)."""
    if type(a) is not type(b) or message_bytes(a) != message_bytes(b):
        return False
    if isinstance(a, AssistantMessage) and isinstance(b, AssistantMessage):
        # no text is no text: a streamed answer's "" is the next input's null
        return (a.content or "") == (b.content or "") and [c.id for c in a.tool_calls] == [c.id for c in b.tool_calls]
    if isinstance(a, ToolResultMessage) and isinstance(b, ToolResultMessage):
        return a.tool_call_id == b.tool_call_id and a.content == b.content
    return getattr(a, "content", None) == getattr(b, "content", None)


def after_last_answer(expected: Sequence[MessageModel], sent: Sequence[MessageModel]) -> int:
    """Where the new messages of a rewritten input start: after the agent's last answer, found in the
    input (an agent that masks or drops old messages keeps its last answer whole); none are new if the
    answer is not there."""
    last = next((m for m in reversed(expected) if isinstance(m, AssistantMessage)), None)
    for i in range(len(sent) - 1, -1, -1):
        if last is not None and same(sent[i], last):
            return i + 1
    return len(sent)


@dataclass
class Stats:
    """What went in, for the report of `collect` and `import`."""

    spans: int = 0
    calls: int = 0
    tool_results: int = 0
    runs: int = 0
    rewritten: int = 0  # calls whose input is not the rebuilt history (the agent dropped or rewrote messages)
    duplicates: int = 0
    without_content: Counter[str] = field(default_factory=Counter)  # model-call spans with no content, by name
    results_unknown: int = 0  # tool calls whose result no later input nor tool span carried
    answers_unknown: int = 0  # model calls whose answer neither their span nor the next input carried

    def line(self) -> str:
        out = f"{self.spans} spans: {self.calls} model calls in {self.runs} runs, {self.tool_results} tool results"
        if self.rewritten:
            out += f"; {self.rewritten} calls sent a rewritten history (not append-only)"
        if self.without_content:
            names = ", ".join(f"{n} x{c}" for n, c in self.without_content.most_common(5))
            out += f"; {sum(self.without_content.values())} model-call spans without content, skipped ({names})"
        if self.answers_unknown:
            out += f"; {self.answers_unknown} answers not carried by any span"
        if self.results_unknown:
            out += f"; {self.results_unknown} tool results not carried by any span"
        if self.duplicates:
            out += f"; {self.duplicates} spans received twice, ignored"
        return out


@dataclass
class _Run:
    stream: str
    pipeline: str
    corr: str = ""
    trace: str | None = None  # the trace of the open turn
    bare: bool = False  # model-call spans with no parent and no conversation id: continued by their inputs
    last_answer: str | None = None
    steps: dict[str, _Step] = field(default_factory=dict)  # by parent span id (or agent name, or "chat")


@dataclass
class _Step:
    stream: str
    node: str
    run: _Run
    expected: list[MessageModel]  # what a replay rebuilds for the next call (under the agent's own knobs)
    pending: dict[str, ToolCallInfo] = field(default_factory=dict)
    iteration: int = 0
    last_end_ns: int = 0
    unanswered: tuple[InSpan, CallContent] | None = None  # the last call, its LlmCallCompleted not yet written


class SpanSink:
    """Turns batches of spans into events, keeping what later batches of the same runs need."""

    def __init__(self, writer: EventWriter) -> None:
        self.writer = writer
        self.stats = Stats()
        self.runs: dict[str, _Run] = {}  # by key: "trace:<id>", "conversation:<id>", "calls-<first trace id>"
        self.trace_runs: dict[str, str] = {}  # trace id -> run key
        self.seen: OrderedDict[str, None] = OrderedDict()
        self.tool_spans: OrderedDict[str, InSpan] = OrderedDict()  # by tool call id
        self.agent_names: OrderedDict[str, str] = OrderedDict()  # agent span id -> gen_ai.agent.name
        self.last_ns: dict[str, int] = {}  # per stream: timestamps never go back

    async def remember(self, reader: EventReader) -> None:
        """The model calls the store already holds from spans: taken in again (a file imported twice, a
        batch retried across a restart), they are dropped as duplicates."""
        for stored in await reader.read_kinds([LlmCallStarted.TAG]):
            extra = stored.event.kind.engine_notes
            if isinstance(extra, dict) and extra.get("origin") == ORIGIN:
                self.seen[f"{extra.get('trace_id')}/{extra.get('span_id')}"] = None

    async def _emit(self, stream: str, kind: EventData, corr: str, ts_ns: int) -> None:
        ts = max(ts_ns, self.last_ns.get(stream, 0))
        self.last_ns[stream] = ts
        await self.writer.append(Event.new(stream, kind, SOURCE, corr, timestamp_ns=ts))

    async def add(self, spans: Sequence[InSpan], contents: dict[str, CallContent] | None = None) -> None:
        """One batch. `contents`: model-call content already known by span id (an LHAR file's bodies)."""
        fresh = []
        for s in spans:
            key = f"{s.trace_id}/{s.span_id}"
            if key in self.seen:
                self.stats.duplicates += 1
                continue
            self.seen[key] = None
            if len(self.seen) > SEEN_SPANS_KEPT:
                self.seen.popitem(last=False)
            fresh.append(s)
        self.stats.spans += len(fresh)
        for s in fresh:
            if s.kind == TOOL:
                call_id, _ = tool_result(s.attrs)
                if call_id:
                    self.tool_spans[call_id] = s
                    if len(self.tool_spans) > TOOL_SPANS_KEPT:
                        self.tool_spans.popitem(last=False)
            elif s.kind == AGENT and s.attrs.get("gen_ai.agent.name"):
                self.agent_names[s.span_id] = str(s.attrs["gen_ai.agent.name"])
                if len(self.agent_names) > TOOL_SPANS_KEPT:
                    self.agent_names.popitem(last=False)
        for s in sorted((s for s in fresh if s.kind == CHAT), key=lambda s: s.start_ns):
            content = (contents or {}).get(s.span_id) or call_content(s.attrs)
            if content is None:
                self.stats.without_content[s.name] += 1
                continue
            await self._call(s, content)
        for s in sorted((s for s in fresh if s.parent_id is None and s.kind != CHAT), key=lambda s: s.end_ns):
            await self._close_turn(s.trace_id, s.end_ns, s.error, s.name)

    # -- runs and steps ---------------------------------------------------------------------------------
    def _bare_step(self, s: InSpan, content: CallContent) -> _Step | None:
        """The step a parentless call continues: the longest rebuilt history its input starts with."""
        best: _Step | None = None
        for run in self.runs.values():
            if not run.bare or run.pipeline != s.service:
                continue
            for st in run.steps.values():
                n = len(st.expected)
                fits = n <= len(content.input) and all(map(same, st.expected, content.input[:n]))
                if fits and (best is None or n > len(best.expected)):
                    best = st
        return best

    async def _run_for(self, s: InSpan, content: CallContent) -> tuple[_Run, _Step | None]:
        conversation = s.attrs.get("gen_ai.conversation.id") or s.attrs.get("session.id")
        if conversation:
            key, stream = f"conversation:{conversation}", f"conversation-{conversation}"
        elif s.parent_id is None:
            st = self._bare_step(s, content)
            if st is not None:
                return st.run, st
            key = stream = f"calls-{s.trace_id}"
        else:
            key, stream = f"trace:{s.trace_id}", f"trace-{s.trace_id}"
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = _Run(stream, s.service, bare=not conversation and s.parent_id is None)
            self.stats.runs += 1
        if run.trace != s.trace_id and not (run.bare and run.corr):
            if run.trace is not None:
                await self._close_turn(run.trace, s.start_ns, False, None)
            await self._open_turn(run, s, content)
        return run, None

    async def _open_turn(self, run: _Run, s: InSpan, content: CallContent) -> None:
        run.trace, run.corr = s.trace_id, str(uuid.uuid5(uuid.NAMESPACE_OID, f"otel-trace:{s.trace_id}"))
        self.trace_runs[s.trace_id] = next(k for k, r in self.runs.items() if r is run)
        users = [m.content for m in content.input if isinstance(m, UserMessage)]
        message = users[-1] if users else ""
        await self._emit(run.stream, PipelineRequested(pipeline=run.pipeline, inputs={"message": message}), run.corr,
                         s.start_ns)  # fmt: skip
        await self._emit(run.stream, WorkflowStarted(user_message=f"trace {s.trace_id}", node_count=1), run.corr,
                         s.start_ns)  # fmt: skip

    async def _step_for(self, run: _Run, s: InSpan, content: CallContent) -> _Step:
        named = s.attrs.get("gen_ai.agent.name") or self.agent_names.get(s.parent_id or "")
        # a step is its parent span (its name is fixed once known); in a conversation, its agent across traces
        key = str(named or "chat") if run.stream.startswith("conversation-") else s.parent_id or str(named or "chat")
        st = run.steps.get(key)
        if st is not None:
            return st
        node = str(named) if named else f"agent-{key[:8]}" if key == s.parent_id else key
        first = content.input
        system = first[0].content if first and isinstance(first[0], SystemMessage) else ""
        task_at = 1 if first and isinstance(first[0], SystemMessage) else 0
        task = first[task_at].content if len(first) > task_at and isinstance(first[task_at], UserMessage) else ""
        expected: list[MessageModel] = [SystemMessage(content=system)]
        if task:
            expected.append(UserMessage(content=task))
        st = run.steps[key] = _Step(f"{run.stream}:step:{node}", node, run, expected)
        extra: dict[str, Any] = {
            "origin": ORIGIN, "agent": node, "system_prompt": system, "task": task, "context_mode": "carry",
            "fresh_cutoff_ns": None, "knobs": AGENT_OWN_KNOBS.values(), "provider": s.service,
            "model": content.model, "convention": content.convention,
        }  # fmt: skip
        started = WorkflowNodeStarted(node_id=node, description=f"agent={node} (spans of {s.service})", zymi_tui=extra)
        await self._emit(run.stream, started, run.corr, s.start_ns)
        return st

    # -- one model call ---------------------------------------------------------------------------------
    async def _call(self, s: InSpan, content: CallContent) -> None:
        run, st = await self._run_for(s, content)
        if st is None:
            st = await self._step_for(run, s, content)
        sent = list(content.input)
        if st.unanswered is not None:  # the previous call's answer, as this input holds it
            at = len(st.expected)
            held = sent[at] if len(sent) > at and all(map(same, st.expected, sent[:at])) else None
            await self._answer(st, held if isinstance(held, AssistantMessage) else None)
        n = 0
        while n < min(len(st.expected), len(sent)) and same(st.expected[n], sent[n]):
            n += 1
        rewritten = n < len(st.expected)
        tail = sent[n:] if not rewritten else sent[after_last_answer(st.expected, sent) :]
        for m in tail:
            if isinstance(m, ToolResultMessage):
                await self._tool_done(st, m.tool_call_id, m.content, s.start_ns)
            elif isinstance(m, UserMessage):
                kind = UserMessageReceived(content=m, connector=SOURCE)
                await self._emit(st.stream, kind, run.corr, s.start_ns)
                st.expected.append(m)
            else:
                rewritten = True  # a system or assistant message no event of the store can carry
        self.stats.rewritten += rewritten
        st.iteration += 1
        extra = {"origin": ORIGIN, "span_id": s.span_id, "trace_id": s.trace_id,
                 "history": REWRITTEN if rewritten else APPEND_ONLY}  # fmt: skip
        started = LlmCallStarted(
            iteration=st.iteration, message_count=len(sent),
            approx_context_chars=sum(message_bytes(m) for m in sent), zymi_tui=extra,
        )  # fmt: skip
        await self._emit(st.stream, started, run.corr, s.start_ns)
        self.stats.calls += 1
        st.unanswered = (s, content)
        if content.output is not None:
            await self._answer(st, content.output)
        # else the span carries no answer (OpenLLMetry's streamed tool calls): the next call's input holds it

    async def _answer(self, st: _Step, answer: AssistantMessage | None) -> None:
        """The `LlmCallCompleted` of the step's last call (`answer` None: no span nor input carried it)."""
        assert st.unanswered is not None
        s, content = st.unanswered
        st.unanswered = None
        if answer is None:
            self.stats.answers_unknown += 1
        calls = answer.tool_calls if answer is not None else ()
        done = LlmCallCompleted(
            response_message=answer, has_tool_calls=bool(calls), usage=content.usage,
            content_preview=preview(answer.content if answer else None), finish_reason=content.finish_reason,
        )  # fmt: skip
        await self._emit(st.stream, done, st.run.corr, s.end_ns)
        for c in calls:
            await self._emit(st.stream, ToolCallRequested(tool_name=c.name, arguments=c.arguments, call_id=c.id),
                             st.run.corr, s.end_ns)  # fmt: skip
            st.pending[c.id] = c
        st.expected.append(answer if answer is not None else AssistantMessage(content=None))
        st.last_end_ns = s.end_ns
        if answer is not None and not calls:
            st.run.last_answer = answer.content or ""

    async def _tool_done(self, st: _Step, call_id: str, result: str, at_ns: int) -> None:
        st.pending.pop(call_id, None)
        span = self.tool_spans.pop(call_id, None)
        if span is not None:
            ms, err, at_ns = (span.end_ns - span.start_ns) // 1_000_000, span.error, span.end_ns
        else:  # no tool span: the time from the answer to the call that sent the result back
            ms, err = max(0, at_ns - st.last_end_ns) // 1_000_000, False
        kind = ToolCallCompleted(call_id=call_id, result=result, result_preview=preview(result, 200) or "",
                                 is_error=err, duration_ms=ms)  # fmt: skip
        await self._emit(st.stream, kind, st.run.corr, at_ns)
        st.expected.append(ToolResultMessage(tool_call_id=call_id, content=result))
        self.stats.tool_results += 1

    # -- the end of a turn ------------------------------------------------------------------------------
    async def _close_turn(self, trace_id: str, end_ns: int, error: bool, name: str | None) -> None:
        key = self.trace_runs.pop(trace_id, None)
        run = self.runs.get(key) if key else None
        if run is None or run.trace != trace_id:
            return
        conversation = key is not None and key.startswith("conversation:")
        for st in run.steps.values():
            if st.unanswered is not None and not conversation:  # a conversation's next turn may hold it
                await self._answer(st, None)
            for call_id in list(st.pending):
                span = self.tool_spans.get(call_id)
                _, result = tool_result(span.attrs) if span is not None else (None, None)
                if result is None:
                    st.pending.pop(call_id)
                    self.stats.results_unknown += 1
                else:
                    await self._tool_done(st, call_id, result, end_ns)
            await self._emit(run.stream, WorkflowNodeCompleted(node_id=st.node, success=not error), run.corr, end_ns)
        await self._emit(run.stream, WorkflowCompleted(success=not error), run.corr, end_ns)
        failure = f"the trace's root span `{name}` ended with an error" if error else None
        done = PipelineCompleted(pipeline=run.pipeline, success=not error, final_output=run.last_answer, error=failure)
        await self._emit(run.stream, done, run.corr, end_ns)
        run.trace = None
        if not conversation:
            del self.runs[key or ""]

    async def close(self) -> None:
        """Seal every turn still open (the collector stops, a file ends)."""
        for run in list(self.runs.values()):
            for st in run.steps.values():
                if st.unanswered is not None:
                    await self._answer(st, None)
            if run.trace is not None:
                end = max(
                    self.last_ns.get(run.stream, 0), *(self.last_ns.get(st.stream, 0) for st in run.steps.values())
                )
                await self._close_turn(run.trace, end, False, None)
