"""One call's context as Markdown, for a person: its layers, each message's bytes, tokens and why it
is there, then the messages' text (`context --format md`, the inspector's `m`)."""

from __future__ import annotations

import json
from typing import Any

from zymi_tui.context.rendered import ContextEntry
from zymi_tui.events.messages import AssistantMessage
from zymi_tui.replay.call_context import CallContext


def _text(entry: ContextEntry) -> str:
    m = entry.message
    content = getattr(m, "content", None)
    text = content if isinstance(content, str) else ""
    if isinstance(m, AssistantMessage) and m.tool_calls:
        text += "".join(f"\n→ {c.name}({c.arguments})" for c in m.tool_calls)
    return text


def context_markdown(row: CallContext, body: dict[str, Any] | None = None) -> str:
    """The call's context for a person: layers, each message's bytes, tokens and reason, and the text."""
    r = row.rendered
    kind = "compaction call" if row.is_compaction else f"iteration {row.iteration}"
    lines = [f"# `{row.stream_id}` seq {row.sequence} ({kind})", ""]
    if r is None:
        return "\n".join([*lines, "The prefix cannot be known here (no project).", ""])
    tokens = sum(e.tokens for e in r.entries)
    lines += [
        f"- {'what-if' if row.whatif else 'rebuilt'}: {r.chars:,} bytes, {r.message_count} messages, "
        f"~{tokens:,} tokens (estimated)",
        f"- recorded: {row.recorded_chars:,} bytes, {row.recorded_message_count} messages, input tokens "
        f"{row.recorded_input_tokens if row.recorded_input_tokens is not None else '-'}"
        f" (cached {row.recorded_cached_tokens if row.recorded_cached_tokens is not None else '-'})",
        f"- knobs: {r.knobs.describe()}",
        "- layers: " + " ".join(f"{k} {r.layer_bytes.get(k, 0):,}" for k in "ABC") + " bytes",
    ]
    if row.reuse is not None and not row.is_compaction:
        brk = row.reuse.broken
        lines.append(
            f"- prefix shared with the previous call: {row.reuse.messages} message(s), {row.reuse.chars:,} bytes"
            + ("" if brk is None else f"; broken at message {brk.index} ({brk.cause})")
        )
    if body is not None:
        lines.append(f"- request body: {len(json.dumps(body, ensure_ascii=False).encode()):,} bytes of JSON")
    lines += ["", "| # | layer | role | seq | bytes | ~tokens | reason |", "|---:|---|---|---:|---:|---:|---|"]
    for i, e in enumerate(r.entries):
        seq = "" if e.source_seq is None else str(e.source_seq)
        reason = e.reason.replace("|", "/")
        lines.append(f"| {i} | {e.layer} | {e.message.role} | {seq} | {e.bytes:,} | {e.tokens:,} | {reason} |")
    for i, e in enumerate(r.entries):
        lines += ["", f"## {i}. {e.layer} · {e.message.role} · {e.bytes:,} bytes · {e.reason}", "", "````text"]
        lines += [_text(e), "````"]
    return "\n".join(lines) + "\n"
