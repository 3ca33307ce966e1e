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

_OUTPUT_VIA = msgspec.defstruct("OutputVia", [("form", str), ("skipped", list[str] | None, None)], frozen=True)
_Field = tuple[str, Any] | tuple[str, Any, Any]
_DECISION: list[_Field] = [("approval_id", str), ("stream_id", str), ("decided_by", str), ("reason", str | None, None)]
# the fields of each kind the replay has no struct for, as `kinds` declares them (a default: a third item)
_OTHERS: dict[str, list[_Field]] = {
    "ScheduledTaskTriggered": [("entry_id", str), ("task", str)],
    "AgentProcessingStarted": [("conversation_id", str)],
    "AgentProcessingCompleted": [("conversation_id", str), ("success", bool)],
    "ToolCallRequested": [("tool_name", str), ("arguments", str), ("call_id", str)],
    "ApprovalRequested": [
        ("approval_id", str), ("stream_id", str), ("description", str), ("explanation", str | None, None),
        ("channel", str),
    ],
    "ApprovalGranted": _DECISION,
    "ApprovalDenied": _DECISION,
    "ReasoningRequested": [("request_id", str), ("stream_id", str), ("prompt", str), ("channel", str)],
    "ReasoningAnswered": [
        ("request_id", str), ("stream_id", str), ("answer", str), ("answered_by", str), ("is_error", bool, False),
    ],
    "IntentionEmitted": [("intention_tag", str), ("intention_data", str)],
    "IntentionEvaluated": [("intention_tag", str), ("verdict", str)],
    "ResponseReady": [("conversation_id", str), ("content", str)],
    "WorkflowStarted": [("user_message", str), ("node_count", int)],
    "WorkflowCompleted": [("success", bool)],
    "StepSkipped": [("step_id", str), ("reason", str)],
    "OutputResolved": [("chosen_step", str), ("via", _OUTPUT_VIA)],
    "ShellSessionStarted": [("stream_id", str), ("pid", int), ("shell_path", str)],
    "ShellSessionClosed": [("stream_id", str), ("reason", str)],
    "McpServerConnected": [("server", str), ("tool_count", int)],
    "McpServerDisconnected": [("server", str), ("reason", str)],
    "ResumeForked": [("parent_stream_id", str), ("parent_correlation_id", str), ("fork_at_step", str)],
    "OutboundDispatched": [("sink", str), ("sink_type", str), ("status", int), ("triggered_by", str)],
    "OutboundFailed": [("sink", str), ("sink_type", str), ("reason", str), ("triggered_by", str)],
}  # fmt: skip
_ENVELOPES = {
    name: envelope_decoder(name, payload)
    for name, payload in {
        **PAYLOADS,
        **{name: msgspec.defstruct(name, fields, frozen=True, kw_only=True) for name, fields in _OTHERS.items()},
    }.items()
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
