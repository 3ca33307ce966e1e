""" "Was X in the context at call N?": a string searched across the rebuilt context of every call of
a stream, with, per call, whether it was there in full, masked, forgotten or compacted away, and by
which knob."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from zymi_tui.context.rendered import ContextEntry
from zymi_tui.events.kinds import ContextCompacted, LlmCallCompleted, ToolCallCompleted, UserMessageReceived
from zymi_tui.events.messages import AssistantMessage, MessageModel, message_text
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.stored import StoredEvent
from zymi_tui.replay.call_context import CallContext

FULL, MASKED, FORGOTTEN, COMPACTED, ABSENT, NOT_YET = "full", "masked", "forgotten", "compacted", "absent", "not yet"


@dataclass(frozen=True)
class Occurrence:
    """Where the string is in the step stream's own events."""

    sequence: int
    what: str  # "tool result" | "assistant" | "tool call arguments" | "user" | "summary"


@dataclass(frozen=True)
class Presence:
    stream_id: str
    sequence: int  # of the call's LlmCallStarted
    global_id: int
    status: str  # FULL | MASKED | FORGOTTEN | COMPACTED | ABSENT | NOT_YET
    why: str  # human text naming the knob (or the layer it was found in)


def message_haystack(message: MessageModel) -> str:
    text = message_text(message)
    if isinstance(message, AssistantMessage):
        text += "\n" + "\n".join(c.arguments for c in message.tool_calls)
    return text


def occurrences(
    events: Iterable[StoredEvent | ReplayEvent], needle: str
) -> tuple[list[Occurrence], list[tuple[int, int, int]]]:
    """The string's places in the stream, and the recorded compactions as (event seq, start, end)."""
    found: list[Occurrence] = []
    compactions: list[tuple[int, int, int]] = []
    for se in events:
        ev = se.event if isinstance(se, StoredEvent) else se  # a replay's view has the kinds read here
        kind, seq = ev.kind, ev.sequence
        if isinstance(kind, ToolCallCompleted) and needle in (kind.result or kind.result_preview):
            found.append(Occurrence(seq, "tool result"))
        elif isinstance(kind, LlmCallCompleted) and kind.response_message is not None:
            msg = kind.response_message
            if needle in message_text(msg):
                found.append(Occurrence(seq, "assistant"))
            elif needle in message_haystack(msg):
                found.append(Occurrence(seq, "tool call arguments"))
        elif isinstance(kind, UserMessageReceived) and needle in message_text(kind.content):
            found.append(Occurrence(seq, "user"))
        elif isinstance(kind, ContextCompacted):
            start, end = kind.replaces_seq_range
            compactions.append((seq, start, end))
            if needle in kind.summary:
                found.append(Occurrence(seq, "summary"))
    return found, compactions


def _classify(
    call: CallContext,
    entries: Sequence[ContextEntry],
    dropped_entries: Sequence[ContextEntry],
    places: list[Occurrence],
    compactions: list[tuple[int, int, int]],
    needle: str,
    knobs: dict[str, int | None],
) -> tuple[str, str]:
    full = [e for e in entries if needle in message_haystack(e.message) and not e.reason.lower().startswith("mask")]
    if full:
        e = full[0]
        src = "" if e.source_seq is None else f" from seq {e.source_seq}"
        return FULL, f"layer {e.layer}{src}: {e.reason}"
    before = bisect_left(places, call.sequence, key=lambda p: p.sequence)  # `places` are in sequence order
    if not before:
        return NOT_YET, "not in the stream before this call"
    by_seq = {e.source_seq: e for e in entries if e.source_seq is not None}
    # the latest earlier place decides: the newest copy is the one that could still be visible
    for at in range(before - 1, -1, -1):
        place = places[at]
        entry = by_seq.get(place.sequence)
        if entry is not None:
            return MASKED, f"{place.what} at seq {place.sequence}: {entry.reason}"
    place = places[before - 1]
    dropped = {e.source_seq: e for e in dropped_entries if e.source_seq is not None}
    if place.sequence in dropped:
        return FORGOTTEN, f"{place.what} at seq {place.sequence}: {dropped[place.sequence].reason}"
    for at, start, end in compactions:
        if at < call.sequence and start <= place.sequence <= end:
            return COMPACTED, (
                f"{place.what} at seq {place.sequence}: compacted into the summary at seq {at} "
                f"(soft_cap_chars={knobs.get('soft_cap_chars')})"
            )
    return ABSENT, f"{place.what} at seq {place.sequence}: not in this call's context (fresh step or cut)"


def presence(
    calls: Iterable[CallContext],
    events: Sequence[StoredEvent | ReplayEvent],
    needle: str,
    knobs: dict[str, int | None],
) -> list[Presence]:
    """Per agent call of the stream (in order), where `needle` stood. `events` are the step stream's."""
    places, compactions = occurrences(events, needle)
    places.sort(key=lambda p: p.sequence)  # as `call_presence` reads them (a stable sort: sorted events stay)
    found = (call_presence(call, places, compactions, needle, knobs) for call in calls)
    return [p for p in found if p is not None]


def call_presence(
    call: CallContext,
    places: list[Occurrence],
    compactions: list[tuple[int, int, int]],
    needle: str,
    knobs: dict[str, int | None],
) -> Presence | None:
    """Where `needle` stood at one call (None: not an agent call), from `occurrences` of the stream's
    events up to it at least (later ones are not looked at; `places` in sequence order)."""
    if call.is_compaction or call.hard_cap_failure or call.rendered is None:
        return None
    status, why = _classify(call, call.rendered.entries, call.rendered.dropped, places, compactions, needle, knobs)
    return Presence(call.stream_id, call.sequence, call.global_id, status, why)
