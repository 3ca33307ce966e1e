"""Message content as the OpenTelemetry GenAI semantic conventions record it on a span
(`gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`,
`gen_ai.tool.definitions`: JSON strings), made from the OpenAI wire form zymi sends.

A message is `{"role", "parts": [...]}`; a part is `{"type": "text", "content"}`, `{"type":
"tool_call", "id", "name", "arguments"}` or `{"type": "tool_call_response", "id", "response"}`. The
leading system message (the agent's system prompt) is the system instructions; the input messages
are the rest of what was sent, in order, so the two together are the whole request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring as quoted
from typing import Any

from zymi_tui.events.json_text import compact_json_text, quoted_utf8
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
    UserMultimodalMessage,
    to_wire,
)
from zymi_tui.telemetry.otlp_wire import JsonArrayText


def _arguments(text: Any) -> Any:
    """Tool-call arguments as a JSON value when they parse, else the text as sent."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append({"type": "text", "content": item.get("text", "")})
        elif isinstance(item, dict) and item.get("type") == "image_url":
            url = item.get("image_url")
            uri = url.get("url") if isinstance(url, dict) else url
            parts.append({"type": "uri", "modality": "image", "uri": uri})
        else:
            parts.append({"type": "generic", "content": item})
    return parts


def genai_message(wire: dict[str, Any]) -> dict[str, Any]:
    """One OpenAI chat message as a GenAI semantic-conventions message."""
    role = wire.get("role", "user")
    if role == "tool":
        part = {"type": "tool_call_response", "id": wire.get("tool_call_id"), "response": wire.get("content")}
        return {"role": "tool", "parts": [part]}
    parts = _content_parts(wire.get("content"))
    for call in wire.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": fn.get("name"),
                "arguments": _arguments(fn.get("arguments")),
            }
        )
    return {"role": role, "parts": parts}


def split_messages(
    messages: Sequence[dict[str, Any]], *, prompt_first: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instructions parts, input messages) of the messages a call sent; `prompt_first=False`:
    the messages do not start with the system prompt (it is not known), all are input messages."""
    if prompt_first and messages and messages[0].get("role") == "system":
        return _content_parts(messages[0].get("content")), [genai_message(m) for m in messages[1:]]
    return [], [genai_message(m) for m in messages]


def instruction_parts(message: SystemMessage) -> list[dict[str, Any]]:
    """`gen_ai.system_instructions` of a call whose first message is `message` (its system prompt)."""
    return _content_parts(message.content)


def output_messages(message: MessageModel | None, finish_reason: str | None) -> list[dict[str, Any]]:
    """The model's answer as `gen_ai.output.messages` (empty when the call recorded none)."""
    if message is None:
        return []
    out = genai_message(to_wire(message))
    out["finish_reason"] = finish_reason or (
        "tool_call" if isinstance(message, AssistantMessage) and message.tool_calls else "stop"
    )
    return [out]


def output_json(message: MessageModel | None, finish_reason: str | None, text: str | None = None) -> str | None:
    """`as_json(output_messages(message, finish_reason))`, None when the call recorded no answer: the
    message's `message_json` (`text`, when made already) with its finish reason added last."""
    if message is None:
        return None
    reason = finish_reason or ("tool_call" if isinstance(message, AssistantMessage) and message.tool_calls else "stop")
    return "[" + (text or message_json(message))[:-1] + ',"finish_reason":' + quoted(reason) + "}]"


def tool_definitions(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """An OpenAI `tools` array as `gen_ai.tool.definitions`: `{"type", "name", "description", "parameters"}`."""
    out = []
    for t in tools:
        fn: dict[str, Any] = t["function"] if isinstance(t.get("function"), dict) else t
        out.append(
            {
                "type": t.get("type", "function"),
                "name": fn.get("name"),
                "description": fn.get("description"),
                "parameters": fn.get("parameters"),
            }
        )
    return out


as_json = compact_json_text  # json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text(text: str) -> str:
    """`quoted(text)` (a message's content can be long: `quoted_utf8` is the faster escape)."""
    return quoted_utf8(text).decode()


def message_json(m: MessageModel) -> str:
    """`as_json(genai_message(to_wire(m)))`, written directly: the same keys in the same order, each
    string escaped as the encoder escapes it (`encode_basestring`); tool-call arguments go through
    the encoder (a parsed JSON value)."""
    if isinstance(m, ToolResultMessage):
        return (
            '{"role":"tool","parts":[{"type":"tool_call_response","id":'
            + quoted(m.tool_call_id)
            + ',"response":'
            + _text(m.content)
            + "}]}"
        )
    if isinstance(m, AssistantMessage):
        parts = ['{"type":"text","content":' + _text(m.content) + "}"] if m.content else []
        for c in m.tool_calls:
            parts.append(
                '{"type":"tool_call","id":' + quoted(c.id) + ',"name":' + quoted(c.name)
                + ',"arguments":' + as_json(_arguments(c.arguments)) + "}"
            )  # fmt: skip
        return '{"role":"assistant","parts":[' + ",".join(parts) + "]}"
    role = "system" if isinstance(m, SystemMessage) else "user"
    if isinstance(m, SystemMessage | UserMessage | UserMultimodalMessage):
        text = m.content
        part = '{"type":"text","content":' + _text(text) + "}" if text else ""
        return '{"role":"' + role + '","parts":[' + part + "]}"
    return as_json(genai_message(to_wire(m)))  # pragma: no cover - every message kind is above


def message_texts(m: MessageModel, raw: str | None = None) -> tuple[str, bytes]:
    """A message's JSON text as `gen_ai.input.messages` holds it (`raw`, when made already), and that
    text escaped (no quotes), in UTF-8: an item of `JsonArrayText`."""
    return json_texts(message_json(m) if raw is None else raw)


def json_texts(raw: str) -> tuple[str, bytes]:
    """A message's JSON text and that text escaped (no quotes), in UTF-8: `message_texts` of its JSON."""
    return raw, quoted_utf8(raw)[1:-1]


def input_messages(texts: Sequence[tuple[str, bytes]]) -> JsonArrayText:
    """`gen_ai.input.messages` from its messages' `message_texts`."""
    return JsonArrayText(texts)
