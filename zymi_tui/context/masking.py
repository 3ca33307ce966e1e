"""zymi's observation masking pieces (context_window.rs): cuts, primary argument, placeholders.

Every cut is in UTF-8 bytes, floored to a character boundary (docs/context.md#truncation).
"""

from __future__ import annotations

import json
from functools import lru_cache

from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    TextPart,
    ToolCallInfo,
    ToolResultMessage,
    UserMessage,
    UserMultimodalMessage,
)

CONTENT_PREVIEW_BYTES = 200
ARGS_PREVIEW_BYTES = 60
MEMORY_VALUE_BYTES = 200
ELLIPSIS = "…"

PRIMARY_ARG = {
    "execute_shell_command": "command",
    "read_file": "path",
    "write_file": "path",
    "write_memory": "key",
    "read_memory": "key",
    "web_search": "query",
    "web_scrape": "url",
}
ERROR_PREFIXES = ("[tool error]", "[denied", "[rejected", "[requires approval")


def message_bytes(message: MessageModel) -> int:
    """What zymi's `approx_chars` counts for one message (multimodal: its text parts, unjoined)."""
    if isinstance(message, AssistantMessage):
        return len(message.content.encode()) if message.content else 0
    if isinstance(message, UserMultimodalMessage):
        return sum(len(p.text.encode()) for p in message.parts if isinstance(p, TextPart))
    return len(message.content.encode())


def floor_bytes(text: str, limit: int) -> str:
    """The longest prefix of `text` of at most `limit` UTF-8 bytes, on a character boundary."""
    if len(text) * 4 <= limit:  # a character is at most 4 bytes: short text is kept without encoding it
        return text
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", errors="ignore")


def cut_with_ellipsis(text: str, limit: int) -> str:
    """An argument preview: kept if <= limit bytes, else floored to limit-1 bytes plus `…`."""
    if len(text.encode()) <= limit:
        return text
    return floor_bytes(text, max(limit - 1, 0)) + ELLIPSIS


@lru_cache(maxsize=4096)  # a dropped text's placeholder is made again each time it is shown
def primary_arg(tool_name: str, arguments: str) -> str:
    """The placeholder's argument: the tool's primary key, else the first string in key order."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return ""
    if not isinstance(parsed, dict):
        return ""
    key = PRIMARY_ARG.get(tool_name)
    if key is None:
        for k in sorted(parsed):  # serde_json maps are BTreeMaps: key order
            if isinstance(parsed[k], str):
                return cut_with_ellipsis(parsed[k], ARGS_PREVIEW_BYTES)
        return ""
    value = parsed.get(key)
    return cut_with_ellipsis(value, ARGS_PREVIEW_BYTES) if isinstance(value, str) else ""


def is_tool_error(content: str) -> bool:
    return content.startswith(ERROR_PREFIXES)


def placeholder(call: ToolCallInfo | None, content: str, size: int | None = None) -> str:
    """`[masked: <tool>("<arg>") → ok|error, <N> chars]`; N is the original result's byte length."""
    return placeholder_of(call, is_tool_error(content), len(content.encode()) if size is None else size)


def placeholder_of(call: ToolCallInfo | None, error: bool, size: int) -> str:
    """`placeholder` of a result known by its status and byte length."""
    name, args = (call.name, call.arguments) if call else ("unknown", "{}")
    arg = primary_arg(name, args)
    status = "error" if error else "ok"
    if arg:
        return f'[masked: {name}("{arg}") → {status}, {size} chars]'
    return f"[masked: {name} → {status}, {size} chars]"


def mask_assistant(message: AssistantMessage) -> AssistantMessage:
    """A masked turn's assistant: content over 200 bytes cut to 200 + `…`; tool calls verbatim."""
    content = message.content
    if content is None or len(content.encode()) <= CONTENT_PREVIEW_BYTES:
        return message
    return AssistantMessage(
        content=floor_bytes(content, CONTENT_PREVIEW_BYTES) + ELLIPSIS, tool_calls=message.tool_calls
    )


def mask_tool_result(message: ToolResultMessage, turn: AssistantMessage) -> ToolResultMessage:
    call = next((c for c in turn.tool_calls if c.id == message.tool_call_id), None)
    return ToolResultMessage(tool_call_id=message.tool_call_id, content=placeholder(call, message.content))


def memory_text(memory: list[tuple[str, str]]) -> str:
    """Layer B: `[memory]\\n<key>: <value, first 200 bytes>\\n`..."""
    return "[memory]\n" + "".join(f"{k}: {floor_bytes(v, MEMORY_VALUE_BYTES)}\n" for k, v in memory)


class MemoryBlock:
    """A memory snapshot's Layer B message: its text, UTF-8 bytes and lines (compared as a set:
    zymi writes the keys in no stable order). Made once per snapshot by `memory_block`."""

    __slots__ = ("_lines", "bytes", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.bytes = len(text.encode())
        self._lines: frozenset[str] | None = None

    @property
    def lines(self) -> frozenset[str]:
        if self._lines is None:
            self._lines = frozenset(self.text.splitlines())
        return self._lines


@lru_cache(maxsize=64)  # a key holds its values whole: a few snapshots, not a store's worth
def memory_block(memory: tuple[tuple[str, str], ...]) -> MemoryBlock:
    """The Layer B message of a memory snapshot, remembered by the snapshot's value (its keys and
    values, never its identity): memory changes only on `MemoryWritten`, and every call between two
    writes would otherwise cut and join each value again."""
    return MemoryBlock(memory_text(list(memory)))


def compaction_input(messages: list[MessageModel]) -> str:
    """The compaction call's user message, one line per message of the masked span (docs/context.md#compaction)."""
    parts: list[str] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            if m.content is not None:
                parts.append(f"Assistant: {m.content}\n")
        elif isinstance(m, ToolResultMessage):
            parts.append(f"Tool result: {m.content}\n")
        elif isinstance(m, SystemMessage):
            parts.append(f"{m.content}\n")
        elif isinstance(m, UserMessage):
            parts.append(f"User: {m.content}\n")
    return "".join(parts)
