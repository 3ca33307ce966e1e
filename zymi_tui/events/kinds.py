"""Every zymi-core 0.9.3 event kind (docs/engine.md#event-kinds; zymi's events/mod.rs) and the envelope
that carries one: the one declaration of their fields, as msgspec structs.

Each kind is the `data` object of `{"type": <class name>, "data": {...}}`, one line a kind below, its
fields in zymi's order, so `to_data` gives zymi's exact JSON. A reader decodes a row straight into these
structs (`kind_json`); a partial view (a plot's few fields) is derived from them there, never written
again. Of the keys zymi does not know, the one our own engine adds to describe a run (`zymi_tui`) is
kept and written back last; zymi's readers ignore it, and the others, as ours do. A kind we do not know
is read as `UnknownKind` with its raw data kept.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import UNSET

from zymi_tui.events.messages import Message, MessageModel, TokenUsage, decode_hook, dump_message
from zymi_tui.events.patterns import TIMESTAMP_PATTERN, UUID_PATTERN
from zymi_tui.events.timestamps import format_timestamp, parse_timestamp_ns

EXTRA = "zymi_tui"  # the one key a kind keeps that zymi does not declare (what our engine records about a run)


def snake_tag(type_name: str) -> str:
    """`LlmCallStarted` -> `llm_call_started` (the `kind_tag` column)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type_name).lower()


class EventData(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every kind's payload: its class name is the kind's `type`."""

    TYPE: ClassVar[str] = ""
    TAG: ClassVar[str] = ""
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()  # fields zymi leaves out when they are None
    zymi_tui: Any = UNSET  # keyword-only, so a kind's own fields may be required; `to_data` writes it last

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.TYPE = cls.__name__
        cls.TAG = snake_tag(cls.__name__)

    @property
    def type_name(self) -> str:
        return self.TYPE

    @property
    def tag(self) -> str:
        return self.TAG

    @property
    def engine_notes(self) -> Any:
        """What our engine recorded about the run under `zymi_tui` (None when the key is absent)."""
        return None if self.zymi_tui is UNSET else self.zymi_tui

    def to_data(self) -> dict[str, Any]:
        """The `data` object exactly as zymi serialises it: the fields in order, then `zymi_tui`."""
        omit = self.OMIT_WHEN_NONE
        data: dict[str, Any] = {}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name != EXTRA and (value is not None or name not in omit):
                data[name] = json_value(value)
        if self.zymi_tui is not UNSET:
            data[EXTRA] = json_value(self.zymi_tui)
        return data


class OutputVia(msgspec.Struct, frozen=True, kw_only=True):
    """`{"form": "step"}` or `{"form": "any_of", "skipped": [...]}`."""

    form: str
    skipped: list[str] | None = None


def json_value(value: Any) -> Any:
    """A field's value as JSON holds it: a message in its tagged form, a struct as its fields (None
    left out of `OutputVia`), tuples as lists."""
    if isinstance(value, MessageModel):
        return dump_message(value)
    if isinstance(value, msgspec.Struct):
        fields = ((n, getattr(value, n)) for n in value.__struct_fields__)
        return {n: json_value(v) for n, v in fields if v is not None or not isinstance(value, OutputVia)}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    return value


class UnknownKind(msgspec.Struct, frozen=True, kw_only=True):
    """A kind this version does not know: shown, never fatal (zymi aborts on these)."""

    type_name: str
    data: Any = None

    @property
    def tag(self) -> str:
        return snake_tag(self.type_name)

    @property
    def engine_notes(self) -> Any:
        return None

    def to_data(self) -> Any:
        return self.data


# One kind a line: a table of the 35, read as zymi declares them. `frozen=True` on each is for the type
# checker (msgspec inherits it); only a kind with a required field after an optional one says
# `kw_only=True` (its fields still decode and dump in the order written).
# fmt: off
# -- Inbound
class UserMessageReceived(EventData, frozen=True): content: Message; connector: str
class ScheduledTaskTriggered(EventData, frozen=True): entry_id: str; task: str
# -- Agent lifecycle
class AgentProcessingStarted(EventData, frozen=True): conversation_id: str
class AgentProcessingCompleted(EventData, frozen=True): conversation_id: str; success: bool
class LlmCallStarted(EventData, frozen=True): iteration: int; message_count: int; approx_context_chars: int
class LlmCallCompleted(EventData, frozen=True, kw_only=True):
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"finish_reason"})
    response_message: Message | None = None; has_tool_calls: bool; usage: TokenUsage | None = None
    content_preview: str | None = None; finish_reason: str | None = None
class LlmCallFailed(EventData, frozen=True): iteration: int; error: str; elapsed_ms: int
# -- Tools, approvals, reasoning
class ToolCallRequested(EventData, frozen=True): tool_name: str; arguments: str; call_id: str
class ApprovalRequested(EventData, frozen=True, kw_only=True):
    approval_id: str; stream_id: str; description: str; explanation: str | None = None; channel: str
class ApprovalGranted(EventData, frozen=True):
    approval_id: str; stream_id: str; decided_by: str; reason: str | None = None
class ApprovalDenied(EventData, frozen=True):
    approval_id: str; stream_id: str; decided_by: str; reason: str | None = None
class ReasoningRequested(EventData, frozen=True): request_id: str; stream_id: str; prompt: str; channel: str
class ReasoningAnswered(EventData, frozen=True):
    request_id: str; stream_id: str; answer: str; answered_by: str; is_error: bool = False
class ToolCallCompleted(EventData, frozen=True, kw_only=True):
    call_id: str; result: str = ""; result_preview: str; is_error: bool; duration_ms: int; replayed: bool = False
# -- ESAA intentions
class IntentionEmitted(EventData, frozen=True): intention_tag: str; intention_data: str
class IntentionEvaluated(EventData, frozen=True): intention_tag: str; verdict: str
# -- Outbound
class ResponseReady(EventData, frozen=True): conversation_id: str; content: str
# -- Workflow
class WorkflowStarted(EventData, frozen=True): user_message: str; node_count: int
class WorkflowNodeStarted(EventData, frozen=True): node_id: str; description: str
class WorkflowNodeCompleted(EventData, frozen=True): node_id: str; success: bool
class WorkflowCompleted(EventData, frozen=True): success: bool
class StepSkipped(EventData, frozen=True): step_id: str; reason: str
class OutputResolved(EventData, frozen=True): chosen_step: str; via: OutputVia
# -- Memory
class MemoryWritten(EventData, frozen=True): key: str; value: str; previous_value_seq: int | None = None
class MemoryDeleted(EventData, frozen=True): key: str; previous_value_seq: int
# -- Context compaction
class ContextCompacted(EventData, frozen=True): replaces_seq_range: tuple[int, int]; summary: str; bytes_saved: int
# -- Shell sessions
class ShellSessionStarted(EventData, frozen=True): stream_id: str; pid: int; shell_path: str
class ShellSessionClosed(EventData, frozen=True): stream_id: str; reason: str
# -- Pipeline service contract
class PipelineRequested(EventData, frozen=True):
    pipeline: str; inputs: dict[str, str] = msgspec.field(default_factory=dict)
class PipelineCompleted(EventData, frozen=True):
    pipeline: str; success: bool; final_output: str | None = None; error: str | None = None
# -- MCP, fork-resume, outbound
class McpServerConnected(EventData, frozen=True): server: str; tool_count: int
class McpServerDisconnected(EventData, frozen=True): server: str; reason: str
class ResumeForked(EventData, frozen=True): parent_stream_id: str; parent_correlation_id: str; fork_at_step: str
class OutboundDispatched(EventData, frozen=True): sink: str; sink_type: str; status: int; triggered_by: str
class OutboundFailed(EventData, frozen=True): sink: str; sink_type: str; reason: str; triggered_by: str
# fmt: on


KNOWN_KINDS: dict[str, type[EventData]] = {cls.TYPE: cls for cls in EventData.__subclasses__()}
KIND_BY_TAG: dict[str, type[EventData]] = {cls.TAG: cls for cls in KNOWN_KINDS.values()}

EventKind = EventData | UnknownKind


def parse_kind(type_name: str, data: Any) -> EventKind:
    """The payload of `type_name` from its JSON value (parsed: dicts, lists, ...), checked strictly as a
    row is read (raises `msgspec.ValidationError`); unknown names become `UnknownKind`."""
    cls = KNOWN_KINDS.get(type_name)
    if cls is None:
        return UnknownKind(type_name=type_name, data=data)
    return msgspec.convert(data, cls, dec_hook=decode_hook)


Uuid = Annotated[str, msgspec.Meta(pattern=UUID_PATTERN)]
Timestamp = Annotated[str, msgspec.Meta(pattern=TIMESTAMP_PATTERN)]


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """One event, in zymi's field order. `sequence` is the store's per-stream number (0 before it is
    stored; read from a row, the `sequence` column, not the JSON's 0). A reader decodes the `kind` as
    `{"type", "data"}` (`kind_json`): its annotation is for the checker and for a view's other fields."""

    id: Uuid
    stream_id: str
    sequence: int = 0
    timestamp: Timestamp
    kind: EventKind
    correlation_id: Uuid | None = None
    causation_id: Uuid | None = None
    source: str

    @classmethod
    def new(
        cls,
        stream_id: str,
        kind: EventKind,
        source: str,
        correlation_id: str | None = None,
        *,
        timestamp_ns: int | None = None,
    ) -> Event:
        """A fresh event as zymi's `Event::new(..).with_correlation(..)` makes it."""
        ns = time.time_ns() if timestamp_ns is None else timestamp_ns
        return cls(
            id=str(uuid.uuid4()),
            stream_id=stream_id,
            timestamp=format_timestamp(ns),
            kind=kind,
            correlation_id=correlation_id,
            source=source,
        )

    @property
    def tag(self) -> str:
        """The snake-case kind tag (the store's `kind_tag` column)."""
        return self.kind.tag

    @property
    def type_name(self) -> str:
        return self.kind.type_name

    @property
    def is_unknown(self) -> bool:
        return isinstance(self.kind, UnknownKind)

    @property
    def timestamp_ns(self) -> int:
        return parse_timestamp_ns(self.timestamp)

    @property
    def time(self) -> datetime:
        return datetime.fromtimestamp(self.timestamp_ns / 1e9, UTC)

    def column_timestamp(self) -> str:
        """The `timestamp` column: the same instant in `+00:00` form."""
        return format_timestamp(self.timestamp_ns, zulu=False)

    def envelope(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "stream_id": self.stream_id,
            "sequence": 0,
            "timestamp": self.timestamp,
            "kind": {"type": self.kind.type_name, "data": self.kind.to_data()},
            "correlation_id": self.correlation_id,
            "causation_id": self.causation_id,
            "source": self.source,
        }

    def raw_envelope(self) -> dict[str, Any]:
        """The envelope with the real sequence, as `events --raw` prints it."""
        env = self.envelope()
        env["sequence"] = self.sequence
        return env

    def to_json(self) -> str:
        """The exact `data` column text zymi would write for this event."""
        return json.dumps(self.envelope(), ensure_ascii=False, separators=(",", ":"))

    def stored_as(self, sequence: int) -> Event:
        """This event with the store's `sequence` (a row read back, or one just written)."""
        return msgspec.structs.replace(self, sequence=sequence)
