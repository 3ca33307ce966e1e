"""The line `describe` shows of a stored row, read from its JSON text with msgspec, not as a whole event.

A search over a long run describes every row it reads: here a row is decoded in one typed pass into the
struct `kind_json` derives from the kind's declaration in `kinds`, the kind is made from it, and the line
is made by `describe_kind`, as from a whole event. Every check `decode_event` makes is made (the envelope
as `row_envelope` checks it, each field by its type, strictly); a row these checks refuse, or of a kind not known
here, is decoded by `decode_event` itself, so a row reads, and is refused, exactly as a whole-event reader
reads or refuses it.
"""

from __future__ import annotations

from datetime import datetime

from zymi_tui.events.describe import Line, describe, describe_kind
from zymi_tui.events.envelope import decode_event
from zymi_tui.events.kind_json import row_decoder, to_kind
from zymi_tui.events.row_envelope import DECODE_ERRORS

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
        env = row_decoder(name).decode(data)
        datetime.fromisoformat(env.timestamp[:19])  # the pattern checked the form; this checks the ranges
        kind = to_kind(name, env.kind.data)  # a message in it checked by the message model
    except (KeyError, *DECODE_ERRORS):  # a message refused by its model raises pydantic's ValueError
        event = decode_event(data, sequence)
        return event.type_name, describe(event)
    return name, describe_kind(name, kind)
