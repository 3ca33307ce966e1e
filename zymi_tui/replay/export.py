"""Exports in formats other tools read: one call's context as Markdown, a store's LLM calls as LHAR
(context-lens's JSON Lines) and as OpenTelemetry spans (OTLP/JSON, GenAI semantic conventions).

The request bodies come from the caller (`Bodies`): building them needs the agent's tools and
limits, which the engine knows. Figures are the store's recorded usage; only what the store holds
is written (no invented latencies or HTTP details: those fields are null or empty).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from zymi_tui import __version__
from zymi_tui.context.builder import ContextEntry
from zymi_tui.events.messages import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from zymi_tui.events.store import STEP_MARK, run_of
from zymi_tui.replay.calls import CallContext

Bodies = Callable[[CallContext], dict[str, Any] | None]  # the exact request body of a call, if known
COLLECTOR = "zymi-tui"


def _iso(ns: int | None) -> str:
    if ns is None:
        return ""
    dt = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 1_000_000_000 // 1_000_000:03d}Z"


def _hex(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def trace_id(row: CallContext) -> str:
    """One trace per run: the run stream and its correlation id (a chat turn is a run)."""
    return _hex(f"{run_of(row.stream_id)}|{row.correlation_id or ''}", 32)


def span_id(row: CallContext) -> str:
    return _hex(f"{row.stream_id}|{row.sequence}|{row.iteration}", 16)


def _step(stream: str) -> str:
    return stream.split(STEP_MARK, 1)[1] if STEP_MARK in stream else stream


def sent_calls(rows: Iterable[CallContext]) -> list[CallContext]:
    """The calls the model received (recorded knobs): agent and compaction calls, not failed builds."""
    return [r for r in rows if not r.hard_cap_failure and not r.simulated and r.rendered is not None]


# -- one call as Markdown ---------------------------------------------------------------------------
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


# -- LHAR ---------------------------------------------------------------------------------------------
COMPOSITION = ("system_prompt", "system_injections", "user_text", "assistant_text", "tool_calls", "tool_results")


def _composition(entries: Sequence[ContextEntry]) -> tuple[list[dict[str, Any]], dict[str, int], list[dict[str, Any]]]:
    tokens: dict[str, int] = dict.fromkeys(COMPOSITION, 0)
    counts: dict[str, int] = dict.fromkeys(COMPOSITION, 0)
    calls: list[dict[str, Any]] = []
    for i, e in enumerate(entries):
        m = e.message
        if isinstance(m, SystemMessage):
            cat = "system_prompt" if i == 0 and e.layer == "A" else "system_injections"
        elif isinstance(m, UserMessage) or m.role == "user_multimodal":
            cat = "user_text"
        elif isinstance(m, ToolResultMessage):
            cat = "tool_results"
        elif isinstance(m, AssistantMessage) and m.tool_calls and not m.content:
            cat = "tool_calls"
        else:
            cat = "assistant_text"
        tokens[cat] += e.tokens
        counts[cat] += 1
        if isinstance(m, AssistantMessage):
            for c in m.tool_calls:
                try:
                    args: Any = json.loads(c.arguments)
                except ValueError:
                    args = c.arguments
                calls.append(
                    {
                        "name": c.name,
                        "call_id": c.id,
                        "arguments": args if isinstance(args, dict | str) else c.arguments,
                    }
                )
    total = sum(tokens.values()) or 1
    comp = [
        {"category": c, "tokens": tokens[c], "pct": round(100 * tokens[c] / total, 2), "count": counts[c]}
        for c in COMPOSITION
        if counts[c]
    ]
    return comp, tokens, calls


@dataclass(frozen=True)
class ExportMeta:
    model: str
    provider: str  # gen_ai.system: "openai" | "anthropic" | ...
    window_tokens: int  # the context window the utilization is measured against


def lhar_lines(rows: Sequence[CallContext], meta: ExportMeta, bodies: Bodies) -> list[dict[str, Any]]:
    """One session line per run (trace), each followed by its calls' entries, in store order."""
    calls = sent_calls(rows)
    by_trace: dict[str, list[CallContext]] = {}
    for r in calls:
        by_trace.setdefault(trace_id(r), []).append(r)
    out: list[dict[str, Any]] = []
    for tid, members in by_trace.items():
        out.append(
            {
                "type": "session",
                "trace_id": tid,
                "started_at": _iso(members[0].ts_ns),
                "tool": "zymi",
                "model": meta.model,
            }
        )
        previous: dict[str, int] = {}
        for seq, r in enumerate(members, start=1):
            out.append(_lhar_entry(r, tid, seq, meta, bodies(r), previous))
    return out


def _lhar_entry(
    r: CallContext, tid: str, seq: int, meta: ExportMeta, body: dict[str, Any] | None, previous: dict[str, int]
) -> dict[str, Any]:
    assert r.rendered is not None
    entries = r.rendered.entries
    comp, tokens, tool_calls = _composition(entries)
    total_tokens = sum(tokens.values())
    inp, outp = r.recorded_input_tokens or 0, r.recorded_output_tokens or 0
    prev = previous.get(r.stream_id)
    previous[r.stream_id] = total_tokens
    elapsed = None if r.done_ts_ns is None or r.ts_ns is None else (r.done_ts_ns - r.ts_ns) / 1e6
    timings = None
    if elapsed is not None:
        tps = outp / (elapsed / 1000) if elapsed > 0 else None
        timings = {"send_ms": 0, "wait_ms": elapsed, "receive_ms": 0, "total_ms": elapsed, "tokens_per_second": tps}
    body_bytes = len(json.dumps(body, ensure_ascii=False).encode()) if body is not None else 0
    system = tokens["system_prompt"]
    return {
        "type": "entry",
        "id": str(uuid.UUID(_hex(f"{r.stream_id}|{r.sequence}|{r.global_id}", 32))),
        "trace_id": tid,
        "span_id": span_id(r),
        "parent_span_id": None,
        "timestamp": _iso(r.ts_ns),
        "sequence": seq,
        "source": {
            "tool": "zymi",
            "tool_version": None,
            "agent_role": "compaction" if r.is_compaction else _step(r.stream_id),
            "collector": COLLECTOR,
            "collector_version": __version__,
        },
        "gen_ai": {
            "system": meta.provider,
            "request": {
                "model": meta.model,
                "max_tokens": (body or {}).get("max_tokens"),
                "temperature": (body or {}).get("temperature"),
                "top_p": None,
                "stop_sequences": [],
            },
            "response": {"model": None, "finish_reasons": [r.finish_reason] if r.finish_reason else []},
            "usage": {"input_tokens": inp, "output_tokens": outp, "total_tokens": inp + outp},
        },
        "usage_ext": {
            "cache_read_tokens": r.recorded_cached_tokens or 0,
            "cache_write_tokens": r.recorded_cache_creation_tokens or 0,
            "thinking_tokens": 0,
            "cost_usd": None,
        },
        "http": {
            "method": "POST",
            "url": None,
            "status_code": None,
            "api_format": "openai-chat",
            "stream": bool((body or {}).get("stream", False)),
            "request_headers": {},
            "response_headers": {},
        },
        "timings": timings,
        "transfer": {"request_bytes": body_bytes, "response_bytes": 0, "compressed": False},
        "context_lens": {
            "window_size": meta.window_tokens,
            "utilization": round(total_tokens / meta.window_tokens, 6) if meta.window_tokens else 0,
            "system_tokens": system,
            "tools_tokens": 0,
            "messages_tokens": total_tokens - system,
            "composition": comp,
            "growth": {
                "tokens_added_this_turn": None if prev is None else total_tokens - prev,
                "cumulative_tokens": total_tokens,
                "compaction_detected": bool(r.is_compaction),
            },
            "tool_calls": tool_calls,
            "security": {"alerts": [], "summary": {"high": 0, "medium": 0, "info": 0}},
        },
        "raw": {"request_body": body, "response_body": None},
    }


# -- OpenTelemetry (OTLP/JSON) ----------------------------------------------------------------------
def _attr(key: str, value: str | int | float | bool) -> dict[str, Any]:
    if isinstance(value, bool):
        v: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}  # OTLP/JSON: 64-bit integers as strings
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def otlp_traces(rows: Sequence[CallContext], meta: ExportMeta, service: str = "zymi") -> dict[str, Any]:
    """An ExportTraceServiceRequest: one `chat {model}` client span per LLM call (GenAI semantic
    conventions), grouped in one trace per run."""
    spans = []
    for r in sent_calls(rows):
        start = r.ts_ns or 0
        end = r.done_ts_ns if r.done_ts_ns is not None else start
        attrs = [
            _attr("gen_ai.operation.name", "chat"),
            _attr("gen_ai.system", meta.provider),
            _attr("gen_ai.provider.name", meta.provider),
            _attr("gen_ai.request.model", meta.model),
            _attr("zymi.stream_id", r.stream_id),
            _attr("zymi.sequence", r.sequence),
            _attr("zymi.iteration", r.iteration),
            _attr("zymi.compaction", r.is_compaction),
            _attr("zymi.approx_context_chars", r.recorded_chars),
            _attr("zymi.message_count", r.recorded_message_count),
        ]
        if r.recorded_input_tokens is not None:
            attrs += [
                _attr("gen_ai.usage.input_tokens", r.recorded_input_tokens),
                _attr("gen_ai.usage.output_tokens", r.recorded_output_tokens or 0),
                _attr("gen_ai.usage.cache_read.input_tokens", r.recorded_cached_tokens or 0),
                _attr("gen_ai.usage.cache_creation.input_tokens", r.recorded_cache_creation_tokens or 0),
            ]
        if r.finish_reason:
            attrs.append(
                {
                    "key": "gen_ai.response.finish_reasons",
                    "value": {"arrayValue": {"values": [{"stringValue": r.finish_reason}]}},
                }
            )
        if r.reuse is not None and not r.is_compaction:
            attrs.append(_attr("zymi.prefix_reuse_messages", r.reuse.messages))
        spans.append(
            {
                "traceId": trace_id(r),
                "spanId": span_id(r),
                "name": f"chat {meta.model}",
                "kind": 3,  # SPAN_KIND_CLIENT
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(end),
                "attributes": attrs,
                "status": {"code": 0},
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", service)]},
                "scopeSpans": [{"scope": {"name": COLLECTOR, "version": __version__}, "spans": spans}],
            }
        ]
    }
