"""The line `describe` shows of a stored row, read from its JSON text with msgspec, not as a whole event.

A search over a long run describes every row it reads: here a row is decoded in one typed pass into a
small struct per kind (the replay's structs for the kinds a replay reads, the others below, each with
every field of `kinds`), and the line is made from it by `describe_kind`, as from a whole event. Every
check `decode_event` makes is made (the envelope as `replay_kinds` checks it, each field by its type,
strictly); a row these checks refuse, or of a kind not known here, is decoded by `decode_event` itself,
so a row reads, and is refused, exactly as a whole-event reader reads or refuses it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from zymi_tui.events.describe import Line, describe, describe_kind
from zymi_tui.events.envelope import decode_event
from zymi_tui.events.lean import DECODE_ERRORS
from zymi_tui.events.replay_kinds import PAYLOADS, envelope_decoder, payload_kind


class ScheduledTaskTriggered(msgspec.Struct, frozen=True):
    entry_id: str
    task: str


class AgentProcessingStarted(msgspec.Struct, frozen=True):
    conversation_id: str


class AgentProcessingCompleted(msgspec.Struct, frozen=True):
    conversation_id: str
    success: bool


class ToolCallRequested(msgspec.Struct, frozen=True):
    tool_name: str
    arguments: str
    call_id: str


class ApprovalRequested(msgspec.Struct, frozen=True, kw_only=True):
    approval_id: str
    stream_id: str
    description: str
    explanation: str | None = None
    channel: str


class ApprovalGranted(msgspec.Struct, frozen=True):
    approval_id: str
    stream_id: str
    decided_by: str
    reason: str | None = None


class ApprovalDenied(msgspec.Struct, frozen=True):
    approval_id: str
    stream_id: str
    decided_by: str
    reason: str | None = None


class ReasoningRequested(msgspec.Struct, frozen=True):
    request_id: str
    stream_id: str
    prompt: str
    channel: str


class ReasoningAnswered(msgspec.Struct, frozen=True):
    request_id: str
    stream_id: str
    answer: str
    answered_by: str
    is_error: bool = False


class IntentionEmitted(msgspec.Struct, frozen=True):
    intention_tag: str
    intention_data: str


class IntentionEvaluated(msgspec.Struct, frozen=True):
    intention_tag: str
    verdict: str


class ResponseReady(msgspec.Struct, frozen=True):
    conversation_id: str
    content: str


class WorkflowStarted(msgspec.Struct, frozen=True):
    user_message: str
    node_count: int


class WorkflowCompleted(msgspec.Struct, frozen=True):
    success: bool


class StepSkipped(msgspec.Struct, frozen=True):
    step_id: str
    reason: str


class OutputVia(msgspec.Struct, frozen=True):
    form: str
    skipped: list[str] | None = None


class OutputResolved(msgspec.Struct, frozen=True):
    chosen_step: str
    via: OutputVia


class ShellSessionStarted(msgspec.Struct, frozen=True):
    stream_id: str
    pid: int
    shell_path: str


class ShellSessionClosed(msgspec.Struct, frozen=True):
    stream_id: str
    reason: str


class McpServerConnected(msgspec.Struct, frozen=True):
    server: str
    tool_count: int


class McpServerDisconnected(msgspec.Struct, frozen=True):
    server: str
    reason: str


class ResumeForked(msgspec.Struct, frozen=True):
    parent_stream_id: str
    parent_correlation_id: str
    fork_at_step: str


class OutboundDispatched(msgspec.Struct, frozen=True):
    sink: str
    sink_type: str
    status: int
    triggered_by: str


class OutboundFailed(msgspec.Struct, frozen=True):
    sink: str
    sink_type: str
    reason: str
    triggered_by: str


_OTHERS: tuple[type[Any], ...] = (
    ScheduledTaskTriggered, AgentProcessingStarted, AgentProcessingCompleted, ToolCallRequested, ApprovalRequested,
    ApprovalGranted, ApprovalDenied, ReasoningRequested, ReasoningAnswered, IntentionEmitted, IntentionEvaluated,
    ResponseReady, WorkflowStarted, WorkflowCompleted, StepSkipped, OutputResolved, ShellSessionStarted,
    ShellSessionClosed, McpServerConnected, McpServerDisconnected, ResumeForked, OutboundDispatched, OutboundFailed,
)  # fmt: skip
_ENVELOPES = {
    name: envelope_decoder(name, payload)
    for name, payload in {**PAYLOADS, **{cls.__name__: cls for cls in _OTHERS}}.items()
}
_KIND_AT = '"kind":{"type":"'  # where zymi writes the kind's name


def _type_name(data: str) -> str:
    """The kind's name as zymi lays the row out ('' if it is not found): only a guess, which the typed
    decoder then checks."""
    at = data.find(_KIND_AT)
    if at < 0:
        return ""
    at += len(_KIND_AT)
    return data[at : data.find('"', at)]


def row_line(data: str, sequence: int) -> tuple[str, Line]:
    """A stored row's kind name and the line `describe` shows of it. Raises `EventDecodeError`, worded
    as `decode_event` words it, for a row a whole-event reader refuses."""
    name = _type_name(data)
    try:
        env = _ENVELOPES[name].decode(data)
        datetime.fromisoformat(env.timestamp[:19])  # the pattern checked the form; this checks the ranges
        kind = env.kind.data
        if name in PAYLOADS:
            kind = payload_kind(kind)  # a message in it checked by the message model
    except (KeyError, *DECODE_ERRORS):  # a message refused by its model raises pydantic's ValueError
        event = decode_event(data, sequence)
        return event.type_name, describe(event)
    return name, describe_kind(name, kind)
