"""A store's LLM calls as LHAR (LLM HTTP Archive), the JSON Lines context-lens reads.

context-lens reads one session per file (`readLharFile` keeps the last `session` line it meets), so
a session is written to a file of its own: one session per conversation (a run stream: a
`zymi run`'s run, or a chat stream's turns). Entries are the calls the model received, in store
order, each with the exact request body when the project is known (`Bodies`). `source.agent_role`
is `main` for the calls of a run's steps, `subagent` for a nested run's or step's, `compaction` for
the summariser's calls; `growth.compaction_detected` marks the agent call whose context a
compaction had just shrunk (context-lens compares it with the same role's earlier calls). Figures
are the store's recorded usage; what the store does not hold (latencies of HTTP phases, headers,
response bodies) is null or empty.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from zymi_tui import __version__
from zymi_tui.context.rendered import ContextEntry
from zymi_tui.context.tokens import estimate_message_tokens, estimate_text_tokens
from zymi_tui.events.kinds import LlmCallStarted
from zymi_tui.events.messages import AssistantMessage, MessageModel, SystemMessage, ToolResultMessage, UserMessage
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.export_calls import Run, RunTracker, Step, hex_id
from zymi_tui.telemetry.message_cache import MessageCache
from zymi_tui.telemetry.otel_content import tool_definitions
from zymi_tui.telemetry.otel_spans import Bodies

COLLECTOR = "zymi-tui"
COMPOSITION = (
    "system_prompt", "tool_definitions", "system_injections", "user_text", "assistant_text", "tool_calls",
    "tool_results",
)  # fmt: skip
MAIN, SUBAGENT, COMPACTION = "main", "subagent", "compaction"


@dataclass(frozen=True)
class ExportMeta:
    model: str
    provider: str  # gen_ai.system: "openai" | "anthropic" | ...
    window_tokens: int  # the context window the utilization is measured against


_ENTRY_JSON = json.JSONEncoder(ensure_ascii=False, check_circular=False)  # json.dumps(v, ensure_ascii=False)


def json_line(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)` and a newline: a line of an LHAR file (one encoder, made
    once; the data is a tree, so the circular check is left out)."""
    return _ENTRY_JSON.encode(value) + "\n"


_SECOND: list[Any] = [None, ""]  # the last second `iso` formatted, and its text (calls come in time order)


def iso(ns: int | None) -> str:
    if ns is None:
        return ""
    second = ns // 1_000_000_000
    if _SECOND[0] != second:
        _SECOND[:] = [second, datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_SECOND[1]}.{ns % 1_000_000_000 // 1_000_000:03d}Z"


def uuid_text(hex32: str) -> str:
    """`str(uuid.UUID(hex32))` of 32 lowercase hex digits: the 8-4-4-4-12 groups."""
    return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:]}"


def session_line(conversation: str, started_ns: int | None, model: str) -> dict[str, Any]:
    return {
        "type": "session",
        "trace_id": hex_id(f"session|{conversation}", 32),
        "started_at": iso(started_ns),
        "tool": "zymi",
        "model": model,
    }


def message_category(m: MessageModel) -> str:
    """The composition category of a message anywhere but first in Layer A (the system prompt)."""
    if isinstance(m, SystemMessage):
        return "system_injections"
    if isinstance(m, UserMessage) or m.role == "user_multimodal":
        return "user_text"
    if isinstance(m, ToolResultMessage):
        return "tool_results"
    if isinstance(m, AssistantMessage) and m.tool_calls and not m.content:
        return "tool_calls"
    return "assistant_text"


def _category(i: int, e: ContextEntry) -> str:
    if i == 0 and e.layer == "A" and isinstance(e.message, SystemMessage):
        return "system_prompt"
    return message_category(e.message)


def message_tool_calls(message: MessageModel) -> list[dict[str, Any]]:
    """context-lens's `tool_calls` items of one message (an assistant message's calls)."""
    calls: list[dict[str, Any]] = []
    if isinstance(message, AssistantMessage):
        for c in message.tool_calls:
            try:
                args: Any = json.loads(c.arguments)
            except ValueError:
                args = c.arguments
            calls.append(
                {"name": c.name, "call_id": c.id, "arguments": args if isinstance(args, dict | str) else c.arguments}
            )
    return calls


class Figures(NamedTuple):
    """What an entry needs of its message, made once per message of a step (`MessageCache`)."""

    tokens: int  # estimated (the tokenizer of the context figures)
    tool_calls: list[dict[str, Any]]
    category: str  # `message_category`


def message_figures(message: MessageModel) -> Figures:
    return Figures(estimate_message_tokens(message), message_tool_calls(message), message_category(message))


def composition(
    entries: Sequence[ContextEntry], tools: Sequence[dict[str, Any]], figures: Sequence[Figures]
) -> tuple[list[dict[str, Any]], dict[str, int], list[dict[str, Any]]]:
    """The context by category (context-lens's composition), tool definitions included, the tokens of
    each category, and the tool calls of its messages. Tokens are estimates: each message's from its
    `figures`; an entry of Layer A or a simulated one is sized from its bytes (`ContextEntry.tokens`)."""
    tokens: dict[str, int] = dict.fromkeys(COMPOSITION, 0)
    counts: dict[str, int] = dict.fromkeys(COMPOSITION, 0)
    calls: list[dict[str, Any]] = []
    for i, (e, f) in enumerate(zip(entries, figures, strict=True)):
        if e.layer == "A":
            cat, n = _category(i, e), e.tokens
        else:
            cat, n = f.category, e.tokens if e.simulated else f.tokens
        tokens[cat] += n
        counts[cat] += 1
        if f.tool_calls:
            calls += f.tool_calls
    if tools:
        tokens["tool_definitions"] = estimate_text_tokens(_ENTRY_JSON.encode(list(tools)))
        counts["tool_definitions"] = len(tools)
    total = sum(tokens.values()) or 1
    comp = [
        {"category": c, "tokens": tokens[c], "pct": round(100 * tokens[c] / total, 2), "count": counts[c]}
        for c in COMPOSITION
        if counts[c]
    ]
    return comp, tokens, calls


def _definitions(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """context-lens's `tool_definitions`: each tool's name and description."""
    return [
        {"name": str(d["name"]), "description": d["description"] if isinstance(d["description"], str) else None}
        for d in tool_definitions(tools)
    ]


def agent_role(row: CallContext, run: Run) -> str:
    if row.is_compaction:
        return COMPACTION
    return SUBAGENT if run.nested or row.stream_id.count(STEP_MARK) > 1 else MAIN


@dataclass
class LharBuilder:
    """`feed` every event in global order with the rows it completed; each returns (session, line)
    pairs: the conversation an entry belongs to and the entry. `started` tells when a conversation's
    first call was made (its session line)."""

    meta: ExportMeta
    bodies: Bodies
    tracker: RunTracker = field(default_factory=RunTracker)
    calls: dict[tuple[str, int], Step] = field(default_factory=dict)  # started, awaiting their row
    sequence: dict[str, int] = field(default_factory=dict)  # per conversation: entries so far
    previous: dict[str, int] = field(default_factory=dict)  # per step stream: the last agent call's tokens
    compacted: set[str] = field(default_factory=set)  # step streams whose last call was a compaction
    figures: MessageCache[Figures] = field(
        default_factory=lambda: MessageCache(message_figures)
    )  # per step stream: its context's messages' tokens and tool calls

    def feed(self, se: ReplayEvent | None, rows: list[CallContext]) -> list[tuple[str, dict[str, Any]]]:
        if se is not None:
            if isinstance(se.kind, LlmCallStarted) and STEP_MARK in se.stream_id:
                self.calls[(se.stream_id, se.sequence)] = self.tracker.step_of(se)
            ended = self.tracker.feed(se)
            if ended is not None and ended.step is not None:  # its stream's figures are not needed again
                self.previous.pop(ended.step.stream, None)
                self.figures.forget(ended.step.stream)
                self.compacted.discard(ended.step.stream)
        out = []
        for row in rows:
            step = None if row.hard_cap_failure else self.calls.pop((row.stream_id, row.sequence), None)
            if step is not None and row.rendered is not None and not row.simulated:
                out.append((step.run.stream, self._entry(row, step)))
        return out

    def _entry(self, r: CallContext, step: Step) -> dict[str, Any]:
        assert r.rendered is not None
        body = self.bodies(r)
        tools = (body or {}).get("tools") or []
        entries = r.rendered.entries
        figures = self.figures.values(r.stream_id, [e.message for e in entries])
        comp, tokens, tool_calls = composition(entries, tools, figures)
        total = sum(tokens.values())
        role = agent_role(r, step.run)
        detected = False
        if r.is_compaction:
            self.compacted.add(r.stream_id)
        else:
            detected = r.stream_id in self.compacted
            self.compacted.discard(r.stream_id)
        prev = None if r.is_compaction else self.previous.get(r.stream_id)
        if not r.is_compaction:
            self.previous[r.stream_id] = total
        conversation = step.run.stream
        seq = self.sequence[conversation] = self.sequence.get(conversation, 0) + 1
        inp, outp = r.recorded_input_tokens or 0, r.recorded_output_tokens or 0
        elapsed = None if r.done_ts_ns is None or r.ts_ns is None else (r.done_ts_ns - r.ts_ns) / 1e6
        timings = None
        if elapsed is not None:
            tps = outp / (elapsed / 1000) if elapsed > 0 else None
            timings = {"send_ms": 0, "wait_ms": elapsed, "receive_ms": 0, "total_ms": elapsed, "tokens_per_second": tps}
        window = self.meta.window_tokens
        return {
            "type": "entry",
            "id": uuid_text(hex_id(f"{r.stream_id}|{r.sequence}|{r.global_id}", 32)),
            "trace_id": step.run.trace_id,
            "span_id": hex_id(f"call|{r.stream_id}|{r.sequence}", 16),  # the OTel export's chat span
            "parent_span_id": step.span_id,
            "timestamp": iso(r.ts_ns),
            "sequence": seq,
            "source": {
                "tool": "zymi",
                "tool_version": None,
                "agent_role": role,
                "collector": COLLECTOR,
                "collector_version": __version__,
            },
            "gen_ai": {
                "system": self.meta.provider,
                "request": {
                    "model": str((body or {}).get("model") or self.meta.model),
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
            "transfer": {
                "request_bytes": len(_ENTRY_JSON.encode(body).encode()) if body is not None else 0,
                "response_bytes": 0,
                "compressed": False,
            },
            "context_lens": {
                "window_size": window,
                "utilization": round(total / window, 6) if window else 0,
                "system_tokens": tokens["system_prompt"],
                "tools_tokens": tokens["tool_definitions"],
                "messages_tokens": total - tokens["system_prompt"] - tokens["tool_definitions"],
                "composition": comp,
                "growth": {
                    "tokens_added_this_turn": None if prev is None else total - prev,
                    "cumulative_tokens": total,
                    "compaction_detected": detected,
                },
                "tool_definitions": _definitions(tools),
                "tool_calls": tool_calls,
                "security": {"alerts": [], "summary": {"high": 0, "medium": 0, "info": 0}},
            },
            "raw": {"request_body": body, "response_body": None},
        }
