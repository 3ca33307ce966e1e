"""zymi's `Message` and `TokenUsage` (types.rs), in their exact JSON forms.

`Message` is externally tagged: `{"System": "..."}`, `{"User": "..."}`,
`{"UserMultimodal": {"parts": [{"Text": "..."}, {"ImageBase64": {...}}]}}`,
`{"Assistant": {"content": "..."|null, "tool_calls": [{"id", "name", "arguments"}]}}`,
`{"ToolResult": {"tool_call_id": "...", "content": "..."}}` (docs/engine.md#envelope).

Each variant is a struct of what it holds (for the assistant and a tool result, exactly the object
under the tag). msgspec reads no externally tagged union, so an event kind's message field is typed
`Message`, which msgspec hands to `decode_hook` as the plain JSON value: the hook reads it through
`_TaggedJson` (one optional field per tag, unknown tags refused) and returns the variant.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType


class ToolCallInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    arguments: str


class SystemMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: ClassVar[Literal["system"]] = "system"
    content: str


class UserMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: ClassVar[Literal["user"]] = "user"
    content: str


class TextPart(msgspec.Struct, frozen=True, kw_only=True):
    text: str


class ImagePart(msgspec.Struct, frozen=True, kw_only=True):
    media_type: str
    data: str


class UserMultimodalMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: ClassVar[Literal["user_multimodal"]] = "user_multimodal"
    parts: tuple[TextPart | ImagePart, ...]

    @property
    def content(self) -> str:
        """The text parts joined with newlines, as the OpenAI provider sends them (docs/engine.md#openai-compatible)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


class AssistantMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: ClassVar[Literal["assistant"]] = "assistant"
    content: str | None
    tool_calls: tuple[ToolCallInfo, ...] = ()


class ToolResultMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: ClassVar[Literal["tool"]] = "tool"
    tool_call_id: str
    content: str


MessageModel = SystemMessage | UserMessage | UserMultimodalMessage | AssistantMessage | ToolResultMessage


class _AnyMessage(abc.ABC):  # noqa: B024  # no methods: only a type the variants are registered with
    """What msgspec sees of a message field: a type it does not know (so it calls `decode_hook`), of
    which every variant is an instance (so it accepts what the hook returns)."""


for _variant in MessageModel.__args__:
    _AnyMessage.register(_variant)

if TYPE_CHECKING:
    Message: TypeAlias = MessageModel
else:
    Message = _AnyMessage


class _PartJson(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    Text: str | UnsetType = UNSET
    ImageBase64: ImagePart | UnsetType = UNSET


class _MultimodalJson(msgspec.Struct, frozen=True):
    parts: tuple[_PartJson, ...]


class _TaggedJson(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A message as zymi writes it: exactly one of these keys."""

    Assistant: AssistantMessage | UnsetType = UNSET
    User: str | UnsetType = UNSET
    ToolResult: ToolResultMessage | UnsetType = UNSET
    System: str | UnsetType = UNSET
    UserMultimodal: _MultimodalJson | UnsetType = UNSET


def _part(part: _PartJson) -> TextPart | ImagePart:
    if isinstance(part.Text, str) and part.ImageBase64 is UNSET:
        return TextPart(text=part.Text)
    if isinstance(part.ImageBase64, ImagePart) and part.Text is UNSET:
        return part.ImageBase64
    raise ValueError("a message part holds exactly one of `Text`, `ImageBase64`")


def _message(tagged: _TaggedJson) -> MessageModel:
    found = [v for v in (tagged.Assistant, tagged.User, tagged.ToolResult, tagged.System, tagged.UserMultimodal)
             if v is not UNSET]  # fmt: skip
    if len(found) != 1:
        raise ValueError("a message holds exactly one of `System`, `User`, `UserMultimodal`, `Assistant`, `ToolResult`")
    if isinstance(tagged.User, str):
        return UserMessage(content=tagged.User)
    if isinstance(tagged.System, str):
        return SystemMessage(content=tagged.System)
    if isinstance(tagged.UserMultimodal, _MultimodalJson):
        return UserMultimodalMessage(parts=tuple(_part(p) for p in tagged.UserMultimodal.parts))
    if isinstance(tagged.Assistant, AssistantMessage):
        return tagged.Assistant
    assert isinstance(tagged.ToolResult, ToolResultMessage)  # the one left
    return tagged.ToolResult


def decode_hook(kind: type, value: Any) -> Any:
    """msgspec's `dec_hook` for a `Message` field: the variant from its plain JSON value (raises
    `ValueError`, which msgspec words with the field's path, for anything else)."""
    if kind is _AnyMessage:
        return _message(msgspec.convert(value, _TaggedJson))
    raise NotImplementedError(f"no decoder for {kind}")


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


class TokenUsage(msgspec.Struct, frozen=True, kw_only=True):
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
