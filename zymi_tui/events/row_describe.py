"""The line `describe` shows of a stored row, read from its JSON text with msgspec, not as a whole event.

A search over a long run describes every row it reads: here a row is decoded in one typed pass into the
kind's own struct (`kinds`, by `kind_json.row_decoder`), and the line is made by `describe_kind`, as
from a whole event. Every check `decode_event` makes is made (the envelope
as `row_envelope` checks it, each field by its type, strictly); a row these checks refuse, or of a kind not known
here, is decoded by `decode_event` itself, so a row reads, and is refused, exactly as a whole-event reader
reads or refuses it.
"""

from __future__ import annotations

from zymi_tui.events.describe import Line, describe, describe_kind
from zymi_tui.events.envelope import decode_event
from zymi_tui.events.kind_json import decode_row, type_name_at


def row_line(data: str, sequence: int) -> tuple[str, Line]:
    """A stored row's kind name and the line `describe` shows of it. Raises `EventDecodeError`, worded
    as `decode_event` words it, for a row a whole-event reader refuses."""
    name = type_name_at(data)
    env = decode_row(name, data)
    if env is None:
        event = decode_event(data, sequence)
        return event.type_name, describe(event)
    return name, describe_kind(env.kind.data)
