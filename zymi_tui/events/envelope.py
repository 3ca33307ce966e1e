"""A stored row read as a whole event (`kinds.Event`), checked as zymi's serde reads it, worded when not.

`{"id":..,"stream_id":..,"sequence":0,"timestamp":"..Z","kind":{"type":..,"data":{..}},
"correlation_id":..|null,"causation_id":null,"source":..}` (docs/engine.md#envelope): `sequence` is
always 0 inside the JSON (the store assigns the real one in its column) and the hash covers the text
as stored.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from zymi_tui.events.kind_json import decode_row, decoder_of, type_name_at
from zymi_tui.events.kinds import KNOWN_KINDS, Event, EventKind, UnknownKind
from zymi_tui.events.row_envelope import DECODE_ERRORS, LeanError, envelope, payload
from zymi_tui.text_safety import escape_controls, has_undecodable_bytes


class EventDecodeError(ValueError):
    """A row whose `data` cannot be read as an event (bad JSON, bad UUID, missing field)."""


def decode_event(data: str, sequence: int) -> Event:
    """Parse a `data` column. Unknown kinds decode; malformed rows raise `EventDecodeError`.

    Rejects what zymi's serde would: bad JSON, a missing field, a bad UUID or timestamp, a kind
    payload without its required fields or with a field of another type. A row laid out as zymi
    writes it is read in one typed pass (`kind_json.row_decoder`); any other row (an unknown kind,
    another layout, or a real error) by `_decode_slowly`, which keeps unknown kinds and words the error.
    """
    env = decode_row(type_name_at(data), data)
    if env is None:
        return _decode_slowly(data, sequence)
    return stored_event(env, env.kind.data, sequence)


def stored_event(env: Any, kind: EventKind, sequence: int) -> Event:
    """The event of a checked envelope and its kind, with the store's `sequence` (not the JSON's 0)."""
    return Event(
        id=env.id,
        stream_id=env.stream_id,
        sequence=int(sequence),
        timestamp=env.timestamp,
        kind=kind,
        correlation_id=env.correlation_id,
        causation_id=env.causation_id,
        source=env.source,
    )


def _decode_slowly(data: str, sequence: int) -> Event:
    if has_undecodable_bytes(data):  # read with `surrogateescape`: bytes that were not UTF-8
        raise EventDecodeError(f"data is not valid UTF-8, near “{escape_controls(_around_bad_byte(data))}”")
    try:
        env = envelope(data)
        cls = KNOWN_KINDS.get(env.kind.type)
        if cls is None:
            kind: EventKind = UnknownKind(type_name=env.kind.type, data=_json(env.kind.data))
        else:
            kind = payload(env, decoder_of(cls))
    except LeanError as e:
        raise EventDecodeError(str(e)) from None
    return stored_event(env, kind, sequence)


def _json(raw: msgspec.Raw) -> Any:
    """An unknown kind's data as `json` reads it (numbers kept as written). A `\\udXXX` escape that is
    not half of a pair is JSON syntax but no text: refused, as msgspec and zymi refuse it."""
    text = bytes(raw)
    try:
        if b"\\ud" in text or b"\\uD" in text:  # rare: zymi writes non-ASCII text as UTF-8, not as escapes
            msgspec.json.decode(text)
        return json.loads(text)
    except RecursionError:
        raise LeanError("data nests too deeply to be read (JSON arrays/objects inside each other)") from None
    except DECODE_ERRORS as e:
        raise LeanError(f"kind.data: {e}") from None


def _around_bad_byte(text: str) -> str:
    """A few characters either side of the first byte that was not UTF-8."""
    i = next(i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff")
    return text[max(0, i - 12) : i + 4]
