"""One line per event (icon, label, style, indent, short detail) and its full payload.

The short form follows zymi's `event_fmt.rs` (docs/engine.md#event-rendering); the full form shows
everything, including the whole tool result and response message, not the previews.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, cast

from zymi_tui.events import kinds as k
from zymi_tui.events.kinds import Event
from zymi_tui.events.messages import AssistantMessage, message_text


def saved_words(bytes_saved: int) -> str:
    """A compaction's `bytes_saved` as a person reads it: `saved 3,022 B`, or `⚠ grew 1,204 B` when the
    summary came back larger than what it replaced (the signal to lower soft_cap_chars)."""
    return f"saved {bytes_saved:,} B" if bytes_saved >= 0 else f"⚠ grew {-bytes_saved:,} B"


def cut(text: str, n: int) -> str:
    """At most n bytes of UTF-8 (floored to a character), with `…` when cut; one line."""
    text = text.replace("\n", " ")
    raw = text.encode(errors="surrogatepass")  # a lone surrogate (JSON's `\ud800`, a byte not UTF-8) is kept
    if len(raw) <= n:
        return text
    for end in range(n, max(n - 4, 0), -1):  # floored to a character
        with contextlib.suppress(UnicodeDecodeError):
            return raw[:end].decode(errors="surrogatepass") + "…"
    return "…"


class Line(NamedTuple):  # a tuple: made for every row a search reads, in a fraction of a dataclass's time
    icon: str
    label: str
    style: str  # "default" | "success" | "failure" | "warning" | "info" | "highlight" | "dim"
    indent: int
    detail: str


def describe(event: Event) -> Line:
    kind = event.kind
    if isinstance(kind, k.UnknownKind):
        return unknown_line(kind.type_name, kind.to_data())
    return describe_kind(kind)


def unknown_line(type_name: str, data: Any) -> Line:
    """A kind this version does not know: its name and its data as JSON."""
    return Line("?", f"Unknown: {type_name}", "warning", 0, cut(json.dumps(data, ensure_ascii=False), 80))


def describe_kind(d: k.EventData) -> Line:
    """The line of a known kind."""
    return _LINES[type(d)](d)


K = TypeVar("K", bound=k.EventData)
Describe = Callable[[k.EventData], Line]


def _by(kind: type[K], line: Callable[[K], Line]) -> tuple[type[k.EventData], Describe]:
    """A kind and how its line is made: `line` is typed as taking that kind, and `_LINES` hands it only
    that kind's payloads (it is looked up by the payload's own class)."""
    return kind, cast(Describe, line)


def _outcome(ok: bool, label: str, indent: int, detail: str) -> Line:
    """The line of something that succeeded or failed: ✓ in the success style, or ✗ in the failure one."""
    return Line("✓", label, "success", indent, detail) if ok else Line("✗", label, "failure", indent, detail)


def _pipeline_completed(d: k.PipelineCompleted) -> Line:
    tail = "ok" if d.success else f"FAIL error={cut(d.error or '', 60)}"
    return _outcome(d.success, "Pipeline done", 0, f"pipeline={d.pipeline} {tail}")


def _output_resolved(d: k.OutputResolved) -> Line:
    extra = f" (any_of, skipped {len(d.via.skipped or [])})" if d.via.form == "any_of" else ""
    return Line("↳", "Output", "info", 0, f"→ {d.chosen_step}{extra}")


def _memory_written(d: k.MemoryWritten) -> Line:
    over = " (overwrite)" if d.previous_value_seq is not None else ""
    return Line("+", "Memory", "info", 1, f"{d.key}{over} = {cut(d.value, 60)}")


def _context_compacted(d: k.ContextCompacted) -> Line:
    lo, hi = d.replaces_seq_range
    return Line("~", "Compact", "warning" if d.bytes_saved < 0 else "info", 1,
                f"seq={lo}..={hi} {saved_words(d.bytes_saved)}")  # fmt: skip


def _llm_call_started(d: k.LlmCallStarted) -> Line:
    label = "Compaction call" if d.iteration == 0 else "LLM call"
    return Line("·", label, "default", 2,
                f"iter={d.iteration} msgs={d.message_count} {d.approx_context_chars} B")  # fmt: skip


def _llm_call_completed(d: k.LlmCallCompleted) -> Line:
    usage = f"tokens={d.usage.input_tokens}in/{d.usage.output_tokens}out" if d.usage else "tokens=?"
    tools = " +tools" if d.has_tool_calls else ""
    return Line("✓", "LLM done", "success", 2, f"{usage}{tools} {cut(d.content_preview or '', 60)}")


def _reasoning_answered(d: k.ReasoningAnswered) -> Line:
    return Line("✗" if d.is_error else "↳", "Reasoning failed" if d.is_error else "Reasoned",
                "failure" if d.is_error else "success", 2, f"by {d.answered_by}: {cut(d.answer, 60)}")  # fmt: skip


_LINES: dict[type[k.EventData], Describe] = dict(  # by the kind's class
    [
        _by(
            k.PipelineRequested,
            lambda d: Line("●", "Pipeline", "info", 0, f"pipeline={d.pipeline} inputs=[{', '.join(d.inputs)}]"),
        ),
        _by(k.PipelineCompleted, _pipeline_completed),
        _by(
            k.ResumeForked,
            lambda d: Line(
                "↩", "Resume", "highlight", 0, f"from {cut(d.parent_stream_id, 40)} at step '{d.fork_at_step}'"
            ),
        ),
        _by(
            k.UserMessageReceived,
            lambda d: Line("@", "User", "info", 0, f"{d.connector}: {cut(message_text(d.content), 80)}"),
        ),
        _by(k.ScheduledTaskTriggered, lambda d: Line("*", "Scheduled", "info", 0, f"{d.entry_id}: {cut(d.task, 60)}")),
        _by(k.ResponseReady, lambda d: Line("»", "Response", "success", 0, cut(d.content, 80))),
        _by(
            k.WorkflowStarted,
            lambda d: Line("◆", "Workflow", "info", 0, f"{d.node_count} node(s) — {cut(d.user_message, 60)}"),
        ),
        _by(k.WorkflowCompleted, lambda d: _outcome(d.success, "WF done", 0, "ok" if d.success else "FAIL")),
        _by(k.OutputResolved, _output_resolved),
        _by(k.WorkflowNodeStarted, lambda d: Line("▸", f"WF:{d.node_id}", "info", 1, cut(d.description, 80))),
        _by(
            k.WorkflowNodeCompleted, lambda d: _outcome(d.success, f"WF:{d.node_id}", 1, "ok" if d.success else "FAIL")
        ),
        _by(k.StepSkipped, lambda d: Line("⊘", f"WF:{d.step_id}", "dim", 1, f"skipped ({d.reason})")),
        _by(k.ShellSessionStarted, lambda d: Line("$", "Shell", "info", 1, f"{d.shell_path} pid={d.pid}")),
        _by(k.ShellSessionClosed, lambda d: Line("$", "Shell closed", "dim", 1, f"reason={d.reason}")),
        _by(k.MemoryWritten, _memory_written),
        _by(k.MemoryDeleted, lambda d: Line("✗", "Memory del", "warning", 1, d.key)),
        _by(k.ContextCompacted, _context_compacted),
        _by(k.LlmCallStarted, _llm_call_started),
        _by(k.LlmCallCompleted, _llm_call_completed),
        _by(k.LlmCallFailed, lambda d: Line("✗", "LLM failed", "failure", 2, f"{d.elapsed_ms}ms {cut(d.error, 80)}")),
        _by(k.ToolCallRequested, lambda d: Line("⚙", f"Tool: {d.tool_name}", "highlight", 2, cut(d.arguments, 80))),
        _by(
            k.ToolCallCompleted,
            lambda d: _outcome(
                not d.is_error, "Tool done", 2, f"{d.duration_ms}ms {cut(d.result or d.result_preview, 60)}"
            ),
        ),
        _by(k.IntentionEmitted, lambda d: Line("!", "Intention", "warning", 2, d.intention_tag)),
        _by(
            k.IntentionEvaluated,
            lambda d: Line("=", "Contract", "warning", 2, f"{d.intention_tag}: {cut(d.verdict, 70)}"),
        ),
        _by(
            k.ApprovalRequested, lambda d: Line("?", "Approval", "warning", 2, f"{d.channel}: {cut(d.description, 70)}")
        ),
        _by(k.ApprovalGranted, lambda d: Line("✓", "Approved", "success", 2, f"by {d.decided_by}")),
        _by(k.ApprovalDenied, lambda d: Line("✗", "Denied", "failure", 2, f"by {d.decided_by}: {d.reason or ''}")),
        _by(k.ReasoningRequested, lambda d: Line("?", "Reasoning", "warning", 2, f"{d.channel}: {cut(d.prompt, 70)}")),
        _by(k.ReasoningAnswered, _reasoning_answered),
        _by(k.McpServerConnected, lambda d: Line("◆", "MCP up", "success", 0, f"{d.server} ({d.tool_count} tools)")),
        _by(
            k.McpServerDisconnected,
            lambda d: Line(
                "◇", "MCP down", "info" if d.reason == "shutdown" else "warning", 0, f"{d.server} — {d.reason}"
            ),
        ),
        _by(
            k.OutboundDispatched,
            lambda d: Line("↗", f"→{d.sink}", "success", 0, f"{d.sink_type} HTTP {d.status} (on {d.triggered_by})"),
        ),
        _by(
            k.OutboundFailed,
            lambda d: Line("⚠", f"→{d.sink} FAIL", "failure", 0, f"{d.sink_type}: {cut(d.reason, 60)}"),
        ),
        _by(
            k.AgentProcessingStarted,
            lambda d: Line("▸", "Processing", "default", 1, f"conversation={d.conversation_id}"),
        ),
        _by(
            k.AgentProcessingCompleted,
            lambda d: _outcome(d.success, "Completed", 1, f"conversation={d.conversation_id}"),
        ),
    ]
)


def full_detail(event: Event) -> list[tuple[str, str]]:
    """Every field of the payload, in full (tool results and responses are not cut)."""
    d = event.kind
    rows: list[tuple[str, str]] = [
        ("kind", event.type_name),
        ("stream", event.stream_id),
        ("sequence", str(event.sequence)),
        ("time", event.timestamp),
        ("source", event.source),
        ("correlation", event.correlation_id or "—"),
    ]
    if isinstance(d, k.LlmCallCompleted) and isinstance(d.response_message, AssistantMessage):
        m = d.response_message
        rows.append(("response", m.content if m.content is not None else "(no text)"))
        for c in m.tool_calls:
            rows.append((f"tool call {c.id}", f"{c.name}({c.arguments})"))
        if d.usage:
            u = d.usage
            rows.append(("usage", f"input {u.input_tokens} (cached {u.cached_input_tokens}, cache write "
                         f"{u.cache_creation_tokens}), output {u.output_tokens}  [recorded]"))  # fmt: skip
        rows.append(("finish_reason", d.finish_reason or "—"))
        return rows
    data: Any = d.to_data()
    if isinstance(data, dict):
        for key, value in data.items():
            rows.append((key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    else:
        rows.append(("data", json.dumps(data, ensure_ascii=False)))
    return rows
