"""STAND-IN ContextBuilder with the exact CONTEXT_API.md names, so the engine can be built and tested
before the context issue lands. At merge, the context issue's zymi_tui/context/ replaces this file.

Rules: context-builder.md (Layer A/B/C, one-pointer compaction ranges, forget, mask, soft/hard caps).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.events.envelope import StoredEvent
from zymi_tui.events.kinds import ContextCompacted, LlmCallCompleted, ToolCallCompleted, UserMessageReceived
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
    UserMultimodalMessage,
    message_text,
    to_wire,
)

COMPACTION_PROMPT = (
    "You are compressing a sequence of masked observations from an autonomous agent's history. Each entry "
    "shows what tool was called and whether it succeeded. Produce a single paragraph summarizing: (a) what "
    "the agent accomplished in this span, (b) any errors or dead ends, (c) any decisions the agent committed "
    "to. Do NOT preserve individual tool call details — the summary replaces them entirely."
)
PRIMARY = {
    "execute_shell_command": "command", "read_file": "path", "write_file": "path", "write_memory": "key",
    "read_memory": "key", "web_search": "query", "web_scrape": "url",
}  # fmt: skip
ERRORS = ("[tool error]", "[denied", "[rejected", "[requires approval")


@dataclass(frozen=True)
class Prefix:
    system_prompt: str
    task: str


@dataclass
class ContextEntry:
    message: MessageModel
    layer: str
    bytes: int
    reason: str
    source_seq: int | None


@dataclass
class CompactionPlan:
    replaces_seq_range: tuple[int, int]
    request_messages: list[MessageModel]
    span_bytes: int


@dataclass
class RenderedContext:
    entries: list[ContextEntry]
    messages: list[MessageModel]
    chars: int
    message_count: int
    compaction: CompactionPlan | None
    hard_cap_exceeded: bool

    def wire(self) -> list[dict[str, Any]]:
        return [to_wire(m) for m in self.messages]


def _bytes(m: MessageModel) -> int:
    return len(message_text(m).encode("utf-8"))


def _cut(text: str, limit: int) -> str:
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def _segments(body: Sequence[MessageModel]) -> list[tuple[int, int, bool]]:
    """(start, end, is_turn)."""
    out, i = [], 0
    while i < len(body):
        if isinstance(body[i], AssistantMessage):
            start = i
            i += 1
            while i < len(body) and isinstance(body[i], ToolResultMessage):
                i += 1
            out.append((start, i, True))
        else:
            out.append((i, i + 1, False))
            i += 1
    return out


def _cut_after_turns(body: Sequence[MessageModel], k: int) -> int:
    end = seen = 0
    for _start, stop, turn in _segments(body):
        if seen >= k:
            break
        end = stop
        seen += turn
    return end


def _forget(body: list[tuple[MessageModel, int]], keep: int | None) -> list[tuple[MessageModel, int]]:
    if keep is None:
        return body
    turns = sum(t for *_, t in _segments([m for m, _ in body]))
    if turns <= keep:
        return body
    return body[_cut_after_turns([m for m, _ in body], turns - keep) :]


def _primary(name: str, args: str) -> str:
    try:
        parsed = json.loads(args)
    except ValueError:
        return ""
    if not isinstance(parsed, dict):
        return ""
    if name in PRIMARY:
        v = parsed.get(PRIMARY[name])
        value = v if isinstance(v, str) else ""
    else:
        value = next((parsed[k] for k in sorted(parsed) if isinstance(parsed[k], str)), "")
    if len(value.encode("utf-8")) > 60:
        value = _cut(value, 59) + "…"
    return value


def _mask_turn(turn: Sequence[MessageModel]) -> list[MessageModel]:
    head = turn[0]
    assert isinstance(head, AssistantMessage)
    content = head.content
    if content is not None and len(content.encode("utf-8")) > 200:
        content = _cut(content, 200) + "…"
    out: list[MessageModel] = [AssistantMessage(content=content, tool_calls=head.tool_calls)]
    calls = {c.id: (c.name, c.arguments) for c in head.tool_calls}
    for m in turn[1:]:
        assert isinstance(m, ToolResultMessage)
        name, args = calls.get(m.tool_call_id, ("unknown", "{}"))
        arg = _primary(name, args)
        status = "error" if m.content.startswith(ERRORS) else "ok"
        n = len(m.content.encode("utf-8"))
        label = f'{name}("{arg}")' if arg else name
        out.append(ToolResultMessage(tool_call_id=m.tool_call_id, content=f"[masked: {label} → {status}, {n} chars]"))
    return out


def _mask(body: Sequence[MessageModel], window: int) -> list[MessageModel]:
    prefix_end = next(
        (i for i, m in enumerate(body) if not isinstance(m, SystemMessage | UserMessage | UserMultimodalMessage)),
        len(body),
    )
    rest = body[prefix_end:]
    segs = _segments(rest)
    to_mask = sum(t for *_, t in segs) - window
    if to_mask <= 0:
        return list(body)
    out = list(body[:prefix_end])
    seen = 0
    for start, stop, turn in segs:
        if turn and seen < to_mask:
            out.extend(_mask_turn(rest[start:stop]))
        else:
            out.extend(rest[start:stop])
        seen += turn
    return out


def _compaction_input(span: Sequence[MessageModel]) -> str:
    buf = []
    for m in span:
        if isinstance(m, AssistantMessage):
            if m.content is not None:
                buf.append(f"Assistant: {m.content}\n")
        elif isinstance(m, ToolResultMessage):
            buf.append(f"Tool result: {m.content}\n")
        elif isinstance(m, SystemMessage):
            buf.append(f"{m.content}\n")
        elif isinstance(m, UserMessage):
            buf.append(f"User: {m.content}\n")
    return "".join(buf)


class ContextBuilder:
    def __init__(self, knobs: ContextKnobs, prefix: Prefix, *, fresh_cutoff_ns: int | None = None) -> None:
        self.knobs = knobs
        self.prefix = prefix
        self.cutoff = fresh_cutoff_ns
        self.events: list[StoredEvent] = []

    def add(self, event: StoredEvent) -> None:
        if isinstance(event.event.kind, LlmCallCompleted | ToolCallCompleted | UserMessageReceived | ContextCompacted):
            self.events.append(event)

    def _tail(self, events: Sequence[StoredEvent]) -> list[tuple[MessageModel, int]]:
        ranges = [e.event.kind.replaces_seq_range for e in events if isinstance(e.event.kind, ContextCompacted)]
        summaries = sorted(
            ((e.event.kind.replaces_seq_range[0], e.event.kind.summary) for e in events
             if isinstance(e.event.kind, ContextCompacted)),
            key=lambda s: s[0],
        )  # fmt: skip
        out: list[tuple[MessageModel, int]] = []
        ptr = 0
        for e in events:
            seq, kind = e.event.sequence, e.event.kind
            if any(lo <= seq <= hi for lo, hi in ranges):
                if ptr < len(summaries) and summaries[ptr][0] == seq:
                    out.append((SystemMessage(content="[compacted history]\n" + summaries[ptr][1]), seq))
                    ptr += 1
                continue
            if isinstance(kind, LlmCallCompleted):
                msg = kind.response_message or AssistantMessage(content=kind.content_preview)
                out.append((msg, seq))
            elif isinstance(kind, ToolCallCompleted):
                out.append(
                    (ToolResultMessage(tool_call_id=kind.call_id, content=kind.result or kind.result_preview), seq)
                )
            elif isinstance(kind, UserMessageReceived):
                out.append((kind.content, seq))
        return out

    def build(self, memory: Sequence[tuple[str, str]] = (), *, allow_compaction: bool = True) -> RenderedContext:
        entries: list[ContextEntry] = []
        a: list[MessageModel] = [SystemMessage(content=self.prefix.system_prompt)]
        if self.prefix.task:
            a.append(UserMessage(content=self.prefix.task))
        for m in a:
            entries.append(ContextEntry(m, "A", _bytes(m), "kept", None))
        if memory:
            text = "[memory]\n" + "".join(f"{k}: {_cut(v, 200)}\n" for k, v in memory)
            m = SystemMessage(content=text)
            entries.append(ContextEntry(m, "B", _bytes(m), "kept", None))
        filtered = [e for e in self.events if self.cutoff is None or e.event.timestamp_ns >= self.cutoff]
        events = filtered if allow_compaction else self.events
        tagged = self._tail(events)
        kept = _forget(tagged, self.knobs.forget_after_turns)
        masked = _mask([m for m, _ in kept], self.knobs.observation_window)
        for m, (orig, seq) in zip(masked, kept, strict=True):
            entries.append(ContextEntry(m, "C", _bytes(m), "kept" if m == orig else "masked", seq))
        messages = [e.message for e in entries]
        chars = sum(e.bytes for e in entries)
        plan = None
        if allow_compaction and chars > self.knobs.soft_cap_chars and masked:
            turns = sum(t for *_, t in _segments(masked))
            k = turns - self.knobs.min_tail_turns
            if k > 0:
                end = _cut_after_turns(masked, k)
                span = masked[:end]
                if span and len(tagged) >= end:
                    plan = CompactionPlan(
                        (tagged[0][1], tagged[end - 1][1]),
                        [SystemMessage(content=COMPACTION_PROMPT), UserMessage(content=_compaction_input(span))],
                        sum(_bytes(m) for m in span),
                    )
        return RenderedContext(entries, messages, chars, len(messages), plan, chars > self.knobs.hard_cap_chars)
