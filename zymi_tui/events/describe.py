"""One line per event (icon, label, style, indent, short detail) and its full payload.

The short form follows zymi's `event_fmt.rs` (docs/engine.md#event-rendering); the full form shows
everything, including the whole tool result and response message, not the previews.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from zymi_tui.events import kinds as k
from zymi_tui.events.envelope import Event
from zymi_tui.events.messages import AssistantMessage, message_text


def saved_words(bytes_saved: int) -> str:
    """A compaction's `bytes_saved` as a person reads it: `saved 3,022 B`, or `⚠ grew 1,204 B` when the
    summary came back larger than what it replaced (the signal to lower soft_cap_chars)."""
    return f"saved {bytes_saved:,} B" if bytes_saved >= 0 else f"⚠ grew {-bytes_saved:,} B"


def cut(text: str, n: int) -> str:
    """At most n bytes of UTF-8 (floored to a character), with `…` when cut; one line."""
    text = text.replace("\n", " ")
    raw = text.encode()
    if len(raw) <= n:
        return text
    return raw[:n].decode(errors="ignore") + "…"


@dataclass(frozen=True, slots=True)
class Line:
    icon: str
    label: str
    style: str  # "default" | "success" | "failure" | "warning" | "info" | "highlight" | "dim"
    indent: int
    detail: str


def describe(event: Event) -> Line:
    d = event.kind
    ok = "success"
    if isinstance(d, k.PipelineRequested):
        return Line("●", "Pipeline", "info", 0, f"pipeline={d.pipeline} inputs=[{', '.join(d.inputs)}]")
    if isinstance(d, k.PipelineCompleted):
        tail = "ok" if d.success else f"FAIL error={cut(d.error or '', 60)}"
        return Line("✓" if d.success else "✗", "Pipeline done", ok if d.success else "failure", 0,
                    f"pipeline={d.pipeline} {tail}")  # fmt: skip
    if isinstance(d, k.ResumeForked):
        return Line("↩", "Resume", "highlight", 0, f"from {cut(d.parent_stream_id, 40)} at step '{d.fork_at_step}'")
    if isinstance(d, k.UserMessageReceived):
        return Line("@", "User", "info", 0, f"{d.connector}: {cut(message_text(d.content), 80)}")
    if isinstance(d, k.ScheduledTaskTriggered):
        return Line("*", "Scheduled", "info", 0, f"{d.entry_id}: {cut(d.task, 60)}")
    if isinstance(d, k.ResponseReady):
        return Line("»", "Response", ok, 0, cut(d.content, 80))
    if isinstance(d, k.WorkflowStarted):
        return Line("◆", "Workflow", "info", 0, f"{d.node_count} node(s) — {cut(d.user_message, 60)}")
    if isinstance(d, k.WorkflowCompleted):
        return Line("✓" if d.success else "✗", "WF done", ok if d.success else "failure", 0,
                    "ok" if d.success else "FAIL")  # fmt: skip
    if isinstance(d, k.OutputResolved):
        extra = f" (any_of, skipped {len(d.via.skipped or [])})" if d.via.form == "any_of" else ""
        return Line("↳", "Output", "info", 0, f"→ {d.chosen_step}{extra}")
    if isinstance(d, k.WorkflowNodeStarted):
        return Line("▸", f"WF:{d.node_id}", "info", 1, cut(d.description, 80))
    if isinstance(d, k.WorkflowNodeCompleted):
        return Line("✓" if d.success else "✗", f"WF:{d.node_id}", ok if d.success else "failure", 1,
                    "ok" if d.success else "FAIL")  # fmt: skip
    if isinstance(d, k.StepSkipped):
        return Line("⊘", f"WF:{d.step_id}", "dim", 1, f"skipped ({d.reason})")
    if isinstance(d, k.ShellSessionStarted):
        return Line("$", "Shell", "info", 1, f"{d.shell_path} pid={d.pid}")
    if isinstance(d, k.ShellSessionClosed):
        return Line("$", "Shell closed", "dim", 1, f"reason={d.reason}")
    if isinstance(d, k.MemoryWritten):
        over = " (overwrite)" if d.previous_value_seq is not None else ""
        return Line("+", "Memory", "info", 1, f"{d.key}{over} = {cut(d.value, 60)}")
    if isinstance(d, k.MemoryDeleted):
        return Line("✗", "Memory del", "warning", 1, d.key)
    if isinstance(d, k.ContextCompacted):
        lo, hi = d.replaces_seq_range
        return Line("~", "Compact", "warning" if d.bytes_saved < 0 else "info", 1,
                    f"seq={lo}..={hi} {saved_words(d.bytes_saved)}")  # fmt: skip
    if isinstance(d, k.LlmCallStarted):
        label = "Compaction call" if d.iteration == 0 else "LLM call"
        return Line("·", label, "default", 2,
                    f"iter={d.iteration} msgs={d.message_count} {d.approx_context_chars} B")  # fmt: skip
    if isinstance(d, k.LlmCallCompleted):
        usage = f"tokens={d.usage.input_tokens}in/{d.usage.output_tokens}out" if d.usage else "tokens=?"
        tools = " +tools" if d.has_tool_calls else ""
        return Line("✓", "LLM done", ok, 2, f"{usage}{tools} {cut(d.content_preview or '', 60)}")
    if isinstance(d, k.LlmCallFailed):
        return Line("✗", "LLM failed", "failure", 2, f"{d.elapsed_ms}ms {cut(d.error, 80)}")
    if isinstance(d, k.ToolCallRequested):
        return Line("⚙", f"Tool: {d.tool_name}", "highlight", 2, cut(d.arguments, 80))
    if isinstance(d, k.ToolCallCompleted):
        return Line("✗" if d.is_error else "✓", "Tool done", "failure" if d.is_error else ok, 2,
                    f"{d.duration_ms}ms {cut(d.result or d.result_preview, 60)}")  # fmt: skip
    if isinstance(d, k.IntentionEmitted):
        return Line("!", "Intention", "warning", 2, d.intention_tag)
    if isinstance(d, k.IntentionEvaluated):
        return Line("=", "Contract", "warning", 2, f"{d.intention_tag}: {cut(d.verdict, 70)}")
    if isinstance(d, k.ApprovalRequested):
        return Line("?", "Approval", "warning", 2, f"{d.channel}: {cut(d.description, 70)}")
    if isinstance(d, k.ApprovalGranted):
        return Line("✓", "Approved", ok, 2, f"by {d.decided_by}")
    if isinstance(d, k.ApprovalDenied):
        return Line("✗", "Denied", "failure", 2, f"by {d.decided_by}: {d.reason or ''}")
    if isinstance(d, k.ReasoningRequested):
        return Line("?", "Reasoning", "warning", 2, f"{d.channel}: {cut(d.prompt, 70)}")
    if isinstance(d, k.ReasoningAnswered):
        return Line("✗" if d.is_error else "↳", "Reasoning failed" if d.is_error else "Reasoned",
                    "failure" if d.is_error else ok, 2, f"by {d.answered_by}: {cut(d.answer, 60)}")  # fmt: skip
    if isinstance(d, k.McpServerConnected):
        return Line("◆", "MCP up", ok, 0, f"{d.server} ({d.tool_count} tools)")
    if isinstance(d, k.McpServerDisconnected):
        return Line("◇", "MCP down", "info" if d.reason == "shutdown" else "warning", 0, f"{d.server} — {d.reason}")
    if isinstance(d, k.OutboundDispatched):
        return Line("↗", f"→{d.sink}", ok, 0, f"{d.sink_type} HTTP {d.status} (on {d.triggered_by})")
    if isinstance(d, k.OutboundFailed):
        return Line("⚠", f"→{d.sink} FAIL", "failure", 0, f"{d.sink_type}: {cut(d.reason, 60)}")
    if isinstance(d, k.AgentProcessingStarted):
        return Line("▸", "Processing", "default", 1, f"conversation={d.conversation_id}")
    if isinstance(d, k.AgentProcessingCompleted):
        return Line("✓" if d.success else "✗", "Completed", ok if d.success else "failure", 1,
                    f"conversation={d.conversation_id}")  # fmt: skip
    return Line("?", f"Unknown: {event.type_name}", "warning", 0, cut(json.dumps(d.to_data(), ensure_ascii=False), 80))


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
