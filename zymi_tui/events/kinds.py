"""Every zymi-core 0.9.3 event kind (docs/engine.md#event-kinds; zymi's events/mod.rs), field for field:
the one declaration of each kind's fields. The fast readers' msgspec structs are derived from these
classes (`kind_json`), never written again.

Each class is the `data` object of `{"type": <class name>, "data": {...}}`. Fields keep zymi's
order, so dumping a model gives zymi's exact JSON. Unknown extra fields (which zymi's readers
ignore, and which our own engine adds to describe a run) are kept and written back after the
known ones. A kind we do not know is read as `UnknownKind` with its raw data kept.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

from zymi_tui.events.messages import Message, MessageModel, TokenUsage, dump_message
from zymi_tui.record import Check, Record, field


def snake_tag(type_name: str) -> str:
    """`LlmCallStarted` -> `llm_call_started` (the `kind_tag` column)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type_name).lower()


class EventData(Record, frozen=True, extra="allow"):
    """Base of every kind's payload (a record: made in code without pydantic, read from JSON by it)."""

    TYPE: ClassVar[str] = ""
    TAG: ClassVar[str] = ""
    _OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()

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

    def to_data(self) -> dict[str, Any]:
        """The `data` object exactly as zymi serialises it: the fields in order, then the extra keys."""
        omit = self._OMIT_WHEN_NONE
        data = {k: json_value(v) for k, v in self.__dict__.items() if v is not None or k not in omit}
        for k, v in (self.model_extra or {}).items():
            data[k] = json_value(v)
        return data


def json_value(value: Any) -> Any:
    """A field's value as JSON holds it: a message in its tagged form, a record as its fields, tuples
    as lists."""
    if isinstance(value, MessageModel):
        return dump_message(value)
    if isinstance(value, OutputVia):
        return value.to_data()
    if isinstance(value, Record):
        return {k: json_value(v) for k, v in value.__dict__.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    return value


class UnknownKind(Record, frozen=True):
    """A kind this version does not know: shown, never fatal (zymi aborts on these)."""

    type_name: str
    data: Any = None

    @property
    def tag(self) -> str:
        return snake_tag(self.type_name)

    def to_data(self) -> Any:
        return self.data


# -- Inbound ---------------------------------------------------------------------------------
class UserMessageReceived(EventData, frozen=True):
    content: Message
    connector: str


class ScheduledTaskTriggered(EventData, frozen=True):
    entry_id: str
    task: str


# -- Agent lifecycle ---------------------------------------------------------------------------
class AgentProcessingStarted(EventData, frozen=True):
    conversation_id: str


class AgentProcessingCompleted(EventData, frozen=True):
    conversation_id: str
    success: bool


class LlmCallStarted(EventData, frozen=True):
    iteration: int
    message_count: int
    approx_context_chars: int


class LlmCallCompleted(EventData, frozen=True):
    _OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"finish_reason"})

    response_message: Message | None = None
    has_tool_calls: bool
    usage: TokenUsage | None = None
    content_preview: str | None = None
    finish_reason: str | None = None


class LlmCallFailed(EventData, frozen=True):
    iteration: int
    error: str
    elapsed_ms: int


# -- Tools, approvals, reasoning ---------------------------------------------------------------
class ToolCallRequested(EventData, frozen=True):
    tool_name: str
    arguments: str
    call_id: str


class ApprovalRequested(EventData, frozen=True):
    approval_id: str
    stream_id: str
    description: str
    explanation: str | None = None
    channel: str


class ApprovalGranted(EventData, frozen=True):
    approval_id: str
    stream_id: str
    decided_by: str
    reason: str | None = None


class ApprovalDenied(EventData, frozen=True):
    approval_id: str
    stream_id: str
    decided_by: str
    reason: str | None = None


class ReasoningRequested(EventData, frozen=True):
    request_id: str
    stream_id: str
    prompt: str
    channel: str


class ReasoningAnswered(EventData, frozen=True):
    request_id: str
    stream_id: str
    answer: str
    answered_by: str
    is_error: bool = False


class ToolCallCompleted(EventData, frozen=True):
    call_id: str
    result: str = ""
    result_preview: str
    is_error: bool
    duration_ms: int
    replayed: bool = False


# -- ESAA intentions ---------------------------------------------------------------------------
class IntentionEmitted(EventData, frozen=True):
    intention_tag: str
    intention_data: str


class IntentionEvaluated(EventData, frozen=True):
    intention_tag: str
    verdict: str


# -- Outbound ----------------------------------------------------------------------------------
class ResponseReady(EventData, frozen=True):
    conversation_id: str
    content: str


# -- Workflow ----------------------------------------------------------------------------------
class WorkflowStarted(EventData, frozen=True):
    user_message: str
    node_count: int


class WorkflowNodeStarted(EventData, frozen=True):
    node_id: str
    description: str


class WorkflowNodeCompleted(EventData, frozen=True):
    node_id: str
    success: bool


class WorkflowCompleted(EventData, frozen=True):
    success: bool


class StepSkipped(EventData, frozen=True):
    step_id: str
    reason: str


class OutputVia(Record, frozen=True):
    """`{"form": "step"}` or `{"form": "any_of", "skipped": [...]}`."""

    form: str
    skipped: list[str] | None = None

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"form": self.form}
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out


class OutputResolved(EventData, frozen=True):
    chosen_step: str
    via: OutputVia


# -- Memory ------------------------------------------------------------------------------------
class MemoryWritten(EventData, frozen=True):
    key: str
    value: str
    previous_value_seq: int | None = None


class MemoryDeleted(EventData, frozen=True):
    key: str
    previous_value_seq: int


# -- Context compaction --------------------------------------------------------------------------
class ContextCompacted(EventData, frozen=True):
    replaces_seq_range: tuple[int, int]
    summary: str
    bytes_saved: int


# -- Shell sessions ------------------------------------------------------------------------------
class ShellSessionStarted(EventData, frozen=True):
    stream_id: str
    pid: int
    shell_path: str


class ShellSessionClosed(EventData, frozen=True):
    stream_id: str
    reason: str


# -- Pipeline service contract -------------------------------------------------------------------
class PipelineRequested(EventData, frozen=True):
    pipeline: str
    inputs: dict[str, str] = field(default_factory=dict)


class PipelineCompleted(EventData, frozen=True):
    pipeline: str
    success: bool
    final_output: str | None = None
    error: str | None = None


# -- MCP, fork-resume, outbound ------------------------------------------------------------------
class McpServerConnected(EventData, frozen=True):
    server: str
    tool_count: int


class McpServerDisconnected(EventData, frozen=True):
    server: str
    reason: str


class ResumeForked(EventData, frozen=True):
    parent_stream_id: str
    parent_correlation_id: str
    fork_at_step: str


class OutboundDispatched(EventData, frozen=True):
    sink: str
    sink_type: str
    status: int
    triggered_by: str


class OutboundFailed(EventData, frozen=True):
    sink: str
    sink_type: str
    reason: str
    triggered_by: str


KNOWN_KINDS: dict[str, type[EventData]] = {
    cls.__name__: cls
    for cls in (
        UserMessageReceived, ScheduledTaskTriggered, AgentProcessingStarted, AgentProcessingCompleted,
        LlmCallStarted, LlmCallCompleted, LlmCallFailed, ToolCallRequested, ApprovalRequested,
        ApprovalGranted, ApprovalDenied, ReasoningRequested, ReasoningAnswered, ToolCallCompleted,
        IntentionEmitted, IntentionEvaluated, ResponseReady, WorkflowStarted, WorkflowNodeStarted,
        WorkflowNodeCompleted, WorkflowCompleted, StepSkipped, OutputResolved, MemoryWritten,
        MemoryDeleted, ContextCompacted, ShellSessionStarted, ShellSessionClosed, PipelineRequested,
        PipelineCompleted, McpServerConnected, McpServerDisconnected, ResumeForked, OutboundDispatched,
        OutboundFailed,
    )
}  # fmt: skip

KIND_BY_TAG: dict[str, type[EventData]] = {cls.TAG: cls for cls in KNOWN_KINDS.values()}

EventKind = EventData | UnknownKind


def parse_kind(type_name: str, data: Any) -> EventKind:
    """Build the payload model for `type_name`; unknown names become `UnknownKind`."""
    cls = KNOWN_KINDS.get(type_name)
    if cls is None:
        return UnknownKind(type_name=type_name, data=data)
    return cls.model_validate(data)


def _unwrap(tagged: Any) -> EventData:
    data: EventData = tagged.data
    return data


def _kind_object(value: Any) -> EventKind:
    """A kind object built in code passes as it is (checked, not copied)."""
    if isinstance(value, EventKind):
        return value
    raise ValueError('expected {"type": <kind>, "data": {..}} or a kind object')


def _tagged(name: str, cls: type[EventData]) -> Any:
    from pydantic import ConfigDict, create_model

    tag: Any = Literal[name]
    config = ConfigDict(frozen=True, defer_build=True)
    return create_model(f"Tagged{name}", __config__=config, type=(tag, ...), data=(cls, ...))


def _tagged_union() -> Any:
    """`{"type": "X", "data": {..}}` for every known X, as one union discriminated on `type`.

    pydantic-core validates it straight from the JSON text (no Python dict in between), which
    is what makes a full read of a store fast. An unknown `type` fails it: `decode_event` then
    takes its slow path, which reads the row as an `UnknownKind`.
    """
    from pydantic import AfterValidator, Field

    tagged = tuple(_tagged(name, cls) for name, cls in KNOWN_KINDS.items())
    return Annotated[Union[tagged], Field(discriminator="type"), AfterValidator(_unwrap)]  # noqa: UP007


class _KindSchema(Check):
    """The envelope's `kind`: JSON or a `{"type", "data"}` dict goes through the tagged union; a kind
    object passes as it is. The union's models are made when the envelope's schema is first built (a
    reader's first decode), not at import: a process that only writes events never needs them."""

    def exact(self, value: object) -> bool:
        return isinstance(value, EventKind)

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Field, PlainValidator

        kind: Any = Annotated[
            Union[_tagged_union(), Annotated[Any, PlainValidator(_kind_object)]],  # noqa: UP007
            Field(union_mode="left_to_right"),
        ]
        return handler.generate_schema(kind)


if TYPE_CHECKING:
    KindField = EventKind
else:
    KindField = Annotated[Any, _KindSchema()]
