"""What a replay reads of an event: its envelope and the payload of the kinds the context depends on.

A replay reads about half the rows of a store and needs a few fields of each: the rows are decoded
here with msgspec into small structs (`ReplayEvent`, one struct per kind below), not into whole
pydantic events. A message inside a kind (`response_message`, `content`) is validated by the one
message model (`events.messages`), so the context builder sees a single message type whichever
way an event reached it. Every check `envelope.decode_event` makes is made here (the envelope is
checked by `lean`, a payload's fields by type, strictly); a row these strict checks refuse, or whose
kind is not a replay kind, is decoded by `decode_event` itself, so a replay accepts, refuses and
words a row exactly as a whole-event reader does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from zymi_tui.events.envelope import decode_event
from zymi_tui.events.lean import DECODE_ERRORS, Envelope
from zymi_tui.events.lean import LlmCallStarted as LlmCallStarted  # the run-list readers' structs, re-exported
from zymi_tui.events.lean import PipelineCompleted as PipelineCompleted
from zymi_tui.events.lean import PipelineRequested as PipelineRequested
from zymi_tui.events.messages import MessageModel, parse_message_json
from zymi_tui.events.stored import StoredEvent


class Usage(msgspec.Struct, frozen=True):
    """`TokenUsage`: provider-reported; `input_tokens` already includes cached tokens."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_creation_tokens: int = 0


class MemoryWritten(msgspec.Struct, frozen=True):
    key: str
    value: str
    previous_value_seq: int | None = None


class MemoryDeleted(msgspec.Struct, frozen=True):
    key: str
    previous_value_seq: int


class WorkflowNodeStarted(msgspec.Struct, frozen=True):
    node_id: str
    description: str
    zymi_tui: Any = None  # what our engine records about the step (an extra field zymi's readers ignore)


class WorkflowNodeCompleted(msgspec.Struct, frozen=True):
    node_id: str
    success: bool


class LlmCallFailed(msgspec.Struct, frozen=True):
    iteration: int
    error: str
    elapsed_ms: int


class ToolCallCompleted(msgspec.Struct, frozen=True, kw_only=True):
    call_id: str
    result: str = ""
    result_preview: str
    is_error: bool
    duration_ms: int
    replayed: bool = False


class ContextCompacted(msgspec.Struct, frozen=True):
    replaces_seq_range: tuple[int, int]
    summary: str
    bytes_saved: int


class LlmCallCompleted(msgspec.Struct, frozen=True, kw_only=True):
    response_message: MessageModel | None = None
    has_tool_calls: bool
    usage: Usage | None = None
    content_preview: str | None = None
    finish_reason: str | None = None


class UserMessageReceived(msgspec.Struct, frozen=True):
    content: MessageModel
    connector: str


ReplayKind = (
    PipelineRequested | PipelineCompleted | MemoryWritten | MemoryDeleted | WorkflowNodeStarted
    | WorkflowNodeCompleted | LlmCallStarted | LlmCallFailed | ToolCallCompleted | ContextCompacted
    | LlmCallCompleted | UserMessageReceived
)  # fmt: skip


class ReplayEvent(msgspec.Struct, frozen=True):
    """An event as a replay (and the context builder) reads it; `kind` is None for the other kinds."""

    global_id: int
    stream_id: str
    sequence: int
    timestamp: str
    source: str
    correlation_id: str | None
    kind: ReplayKind | None


# -- decoding from the stored JSON -----------------------------------------------------------------
_NULL = b"null"


class _LlmCallCompletedJson(msgspec.Struct, frozen=True, kw_only=True):
    response_message: msgspec.Raw = msgspec.Raw(_NULL)  # msgspec reads no `Raw | None`: null is kept as text
    has_tool_calls: bool
    usage: Usage | None = None
    content_preview: str | None = None
    finish_reason: str | None = None


class _UserMessageReceivedJson(msgspec.Struct, frozen=True):
    content: msgspec.Raw
    connector: str


_PLAIN: tuple[type[Any], ...] = (
    PipelineRequested, PipelineCompleted, MemoryWritten, MemoryDeleted, WorkflowNodeStarted, WorkflowNodeCompleted,
    LlmCallStarted, LlmCallFailed, ToolCallCompleted, ContextCompacted,
)  # fmt: skip
# the struct each kind's `data` is decoded into (`payload_kind` makes the replay's kind from it)
PAYLOADS: dict[str, type[Any]] = {
    **{cls.__name__: cls for cls in _PLAIN},
    "LlmCallCompleted": _LlmCallCompletedJson,
    "UserMessageReceived": _UserMessageReceivedJson,
}
REPLAY_TYPES = frozenset(PAYLOADS)  # the kinds' type names


def envelope_decoder(type_name: str, payload: type[Any]) -> msgspec.json.Decoder[Any]:
    """The whole row of one kind in one typed pass: `lean.Envelope`'s fields and checks, with the
    kind's `type` fixed and its `data` decoded as `payload`."""
    kind = msgspec.defstruct(f"{type_name}Kind", [("type", Literal[type_name]), ("data", payload)], frozen=True)
    fields = [(f.name, kind if f.name == "kind" else f.type, f.default) for f in msgspec.structs.fields(Envelope)]
    env = msgspec.defstruct(f"{type_name}Envelope", fields, frozen=True)
    return msgspec.json.Decoder(env)


_ENVELOPES = {name: envelope_decoder(name, payload) for name, payload in PAYLOADS.items()}


def _message(raw: msgspec.Raw) -> MessageModel:
    return parse_message_json(bytes(raw))


def payload_kind(value: Any) -> ReplayKind:
    """The replay's kind from a decoded `PAYLOADS` struct (a message in it checked by the message model)."""
    if isinstance(value, _LlmCallCompletedJson):
        raw = value.response_message
        return LlmCallCompleted(
            response_message=None if bytes(raw) == _NULL else _message(raw),
            has_tool_calls=value.has_tool_calls,
            usage=value.usage,
            content_preview=value.content_preview,
            finish_reason=value.finish_reason,
        )
    if isinstance(value, _UserMessageReceivedJson):
        return UserMessageReceived(_message(value.content), value.connector)
    kind: ReplayKind = value
    return kind


def decode_replay_row(type_name: str, global_id: int, sequence: int, data: str) -> ReplayEvent:
    """A stored row of the kind `type_name` (its `kind_tag` column) as a replay reads it. A row these
    strict checks refuse (or of another kind) is decoded by `decode_event`, which raises
    `EventDecodeError` for a row a whole-event reader refuses."""
    try:
        env = _ENVELOPES[type_name].decode(data)
        datetime.fromisoformat(env.timestamp[:19])  # the pattern checked the form; this checks the ranges
        kind = payload_kind(env.kind.data)
    except (KeyError, *DECODE_ERRORS):  # a message refused by its model raises pydantic's ValueError
        return replay_event(StoredEvent(global_id, decode_event(data, sequence), data))
    return ReplayEvent(global_id, env.stream_id, sequence, env.timestamp, env.source, env.correlation_id, kind)


# -- from a whole event (the engine, the dashboard) ------------------------------------------------
def replay_event(stored: StoredEvent) -> ReplayEvent:
    """The replay's view of a decoded event."""
    ev = stored.event
    return ReplayEvent(
        stored.global_id, ev.stream_id, ev.sequence, ev.timestamp, ev.source, ev.correlation_id, _from_model(ev.kind)
    )


def _from_model(kind: Any) -> ReplayKind | None:
    name = kind.type_name
    if name not in REPLAY_TYPES:  # another kind, or an unknown one
        return None
    if name == "LlmCallCompleted":
        u = kind.usage
        usage = None if u is None else Usage(u.input_tokens, u.output_tokens, u.cached_input_tokens,
                                             u.cache_creation_tokens)  # fmt: skip
        return LlmCallCompleted(response_message=kind.response_message, has_tool_calls=kind.has_tool_calls,
                                usage=usage, content_preview=kind.content_preview,
                                finish_reason=kind.finish_reason)  # fmt: skip
    if name == "UserMessageReceived":
        return UserMessageReceived(kind.content, kind.connector)
    if name == "WorkflowNodeStarted":
        return WorkflowNodeStarted(kind.node_id, kind.description, (kind.model_extra or {}).get("zymi_tui"))
    cls = _BY_NAME[name]
    out: ReplayKind = cls(**{f: getattr(kind, f) for f in cls.__struct_fields__})
    return out


_BY_NAME: dict[str, type[Any]] = {cls.__name__: cls for cls in _PLAIN}
