"""zymi's `Message` and `TokenUsage` (types.rs), in their exact JSON forms.

`Message` is externally tagged: `{"System": "..."}`, `{"User": "..."}`,
`{"UserMultimodal": {"parts": [{"Text": "..."}, {"ImageBase64": {...}}]}}`,
`{"Assistant": {"content": "..."|null, "tool_calls": [{"id", "name", "arguments"}]}}`,
`{"ToolResult": {"tool_call_id": "...", "content": "..."}}` (engine.md §3.1).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ToolCallInfo(_Frozen):
    id: str
    name: str
    arguments: str


class SystemMessage(_Frozen):
    role: Literal["system"] = "system"
    content: str


class UserMessage(_Frozen):
    role: Literal["user"] = "user"
    content: str


class TextPart(_Frozen):
    text: str


class ImagePart(_Frozen):
    media_type: str
    data: str


class UserMultimodalMessage(_Frozen):
    role: Literal["user_multimodal"] = "user_multimodal"
    parts: tuple[TextPart | ImagePart, ...]

    @property
    def content(self) -> str:
        """The text parts joined with newlines, as the OpenAI provider sends them (§7.2)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


class AssistantMessage(_Frozen):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: tuple[ToolCallInfo, ...] = ()


class ToolResultMessage(_Frozen):
    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str


MessageModel = SystemMessage | UserMessage | UserMultimodalMessage | AssistantMessage | ToolResultMessage


def _parse_part(value: Any) -> TextPart | ImagePart:
    if isinstance(value, TextPart | ImagePart):
        return value
    if isinstance(value, dict) and len(value) == 1:
        tag, body = next(iter(value.items()))
        if tag == "Text" and isinstance(body, str):
            return TextPart(text=body)
        if tag == "ImageBase64" and isinstance(body, dict):
            return ImagePart.model_validate(body)
    raise ValueError(f"not a ContentPart: {value!r:.80}")


def parse_message(value: Any) -> MessageModel:
    """Read a `Message` from its externally tagged JSON value."""
    if isinstance(value, MessageModel):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(f"a Message is an object with one key, got {value!r:.80}")
    tag, body = next(iter(value.items()))
    if tag == "System" and isinstance(body, str):
        return SystemMessage(content=body)
    if tag == "User" and isinstance(body, str):
        return UserMessage(content=body)
    if tag == "Assistant" and isinstance(body, dict):
        calls = tuple(ToolCallInfo.model_validate(c) for c in body.get("tool_calls", []))
        content = body.get("content")
        if content is not None and not isinstance(content, str):
            raise ValueError("Assistant.content must be a string or null")
        return AssistantMessage(content=content, tool_calls=calls)
    if tag == "ToolResult" and isinstance(body, dict):
        return ToolResultMessage(tool_call_id=body["tool_call_id"], content=body["content"])
    if tag == "UserMultimodal" and isinstance(body, dict):
        return UserMultimodalMessage(parts=tuple(_parse_part(p) for p in body.get("parts", [])))
    raise ValueError(f"unknown Message variant {tag!r}")


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


Message = Annotated[MessageModel, PlainValidator(parse_message), PlainSerializer(dump_message)]


class TokenUsage(BaseModel):
    """Provider-reported usage. `input_tokens` already includes cached tokens."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_creation_tokens: int = 0


def message_text(message: MessageModel) -> str:
    """The text that zymi counts for this message (null assistant content counts as "")."""
    return message.content or "" if isinstance(message, AssistantMessage) else message.content


def to_wire(message: MessageModel) -> dict[str, Any]:
    """OpenAI chat-completions wire form (engine.md §7.2)."""
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
