"""zymi's `Message` and `TokenUsage` (types.rs), in their exact JSON forms.

`Message` is externally tagged: `{"System": "..."}`, `{"User": "..."}`,
`{"UserMultimodal": {"parts": [{"Text": "..."}, {"ImageBase64": {...}}]}}`,
`{"Assistant": {"content": "..."|null, "tool_calls": [{"id", "name", "arguments"}]}}`,
`{"ToolResult": {"tool_call_id": "...", "content": "..."}}` (docs/engine.md#envelope).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from zymi_tui.record import Check, Record, field


class ToolCallInfo(Record, frozen=True):
    id: str
    name: str
    arguments: str


class _Tagged(Record, frozen=True, extra="forbid"):
    """A variant read from zymi's externally tagged JSON through validation aliases (`{"User": ..}`),
    so pydantic-core reads it straight from the JSON text; built in code by field name (then pydantic
    is not needed: a record)."""


class SystemMessage(_Tagged, frozen=True):
    role: Literal["system"] = "system"
    content: str = field(validation_alias="System")


class UserMessage(_Tagged, frozen=True):
    role: Literal["user"] = "user"
    content: str = field(validation_alias="User")


class TextPart(_Tagged, frozen=True):
    text: str = field(validation_alias="Text")


class ImagePart(_Tagged, frozen=True):
    media_type: str = field(validation_alias=("ImageBase64", "media_type"))
    data: str = field(validation_alias=("ImageBase64", "data"))


class UserMultimodalMessage(_Tagged, frozen=True):
    role: Literal["user_multimodal"] = "user_multimodal"
    parts: tuple[TextPart | ImagePart, ...] = field(validation_alias=("UserMultimodal", "parts"))

    @property
    def content(self) -> str:
        """The text parts joined with newlines, as the OpenAI provider sends them (docs/engine.md#openai-compatible)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


class AssistantMessage(_Tagged, frozen=True):
    role: Literal["assistant"] = "assistant"
    content: str | None = field(validation_alias=("Assistant", "content"))
    tool_calls: tuple[ToolCallInfo, ...] = field(default=(), validation_alias=("Assistant", "tool_calls"))


class ToolResultMessage(_Tagged, frozen=True):
    role: Literal["tool"] = "tool"
    tool_call_id: str = field(validation_alias=("ToolResult", "tool_call_id"))
    content: str = field(validation_alias=("ToolResult", "content"))


MessageModel = SystemMessage | UserMessage | UserMultimodalMessage | AssistantMessage | ToolResultMessage


class _InOrder(Check):
    """A union pydantic tries in its order (its `left_to_right` mode), the first that fits taken."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        if schema.get("type") == "union":
            schema["mode"] = "left_to_right"
        return schema


def dump_message(message: MessageModel) -> dict[str, Any]:
    """The externally tagged JSON value of a message, key order as zymi writes it."""
    if isinstance(message, SystemMessage):
        return {"System": message.content}
    if isinstance(message, UserMessage):
        return {"User": message.content}
    if isinstance(message, AssistantMessage):
        return {
            "Assistant": {
                "content": message.content,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls],
            }
        }
    if isinstance(message, ToolResultMessage):
        return {"ToolResult": {"tool_call_id": message.tool_call_id, "content": message.content}}
    parts: list[dict[str, Any]] = [
        {"Text": p.text} if isinstance(p, TextPart) else {"ImageBase64": {"media_type": p.media_type, "data": p.data}}
        for p in message.parts
    ]
    return {"UserMultimodal": {"parts": parts}}


# Tried in this order, most frequent first (every LlmCallCompleted holds an Assistant message), so
# a valid message is usually accepted at the first try, with no failed attempt to build errors for.
Message = Annotated[
    AssistantMessage | UserMessage | ToolResultMessage | SystemMessage | UserMultimodalMessage, _InOrder()
]
_MESSAGE: Any = None  # pydantic's reader of message JSON, made at its first use (a writer never needs it)


def parse_message_json(data: bytes) -> MessageModel:
    """A `Message` from its externally tagged JSON text, validated as an event's message field is."""
    global _MESSAGE
    if _MESSAGE is None:
        from pydantic import TypeAdapter

        _MESSAGE = TypeAdapter(Message)
    message: MessageModel = _MESSAGE.validate_json(data)
    return message


class TokenUsage(Record, frozen=True):
    """Provider-reported usage. `input_tokens` already includes cached tokens."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_creation_tokens: int = 0


def message_text(message: MessageModel) -> str:
    """The text that zymi counts for this message (null assistant content counts as "")."""
    return message.content or "" if isinstance(message, AssistantMessage) else message.content


def to_wire(message: MessageModel) -> dict[str, Any]:
    """OpenAI chat-completions wire form (docs/engine.md#openai-compatible)."""
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant"}
        if message.content is not None:
            out["content"] = message.content
        if message.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.tool_calls
            ]
        return out
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "content": message.content, "tool_call_id": message.tool_call_id}
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    return {"role": "user", "content": message.content}
