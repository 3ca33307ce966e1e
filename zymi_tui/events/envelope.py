"""The event envelope and its exact compact JSON (docs/engine.md#envelope).

`{"id":..,"stream_id":..,"sequence":0,"timestamp":"..Z","kind":{"type":..,"data":{..}},
"correlation_id":..|null,"causation_id":null,"source":..}`: `sequence` is always 0 inside the
JSON (the store assigns the real one in its column) and the hash covers the text as stored.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec

from zymi_tui.events.kinds import EventKind, KindField, UnknownKind, parse_kind
from zymi_tui.events.patterns import TIMESTAMP_PATTERN, UUID_PATTERN
from zymi_tui.events.timestamps import format_timestamp, parse_timestamp_ns
from zymi_tui.record import Check, Invalid, Record
from zymi_tui.text_safety import escape_controls, has_undecodable_bytes


class _Pattern(Check):
    """Text that matches a pattern: checked by pydantic-core's regex engine, in Rust, when it reads an event
    (the envelope is on the hot path of every read), and by `re` when one is made in code."""

    def __init__(self, pattern: str) -> None:
        self.pattern, self.regex = pattern, re.compile(pattern)

    def exact(self, value: object) -> bool:
        return isinstance(value, str) and self.regex.fullmatch(value) is not None

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.str_schema(pattern=self.pattern)


UuidStr = Annotated[str, _Pattern(UUID_PATTERN)]
TimestampStr = Annotated[str, _Pattern(TIMESTAMP_PATTERN)]


class Event(Record, frozen=True):
    """One event. `sequence` is the store's per-stream number (0 before it is stored; read from a row,
    the `sequence` column, not the JSON's 0)."""

    id: UuidStr
    stream_id: str
    sequence: int = 0
    timestamp: TimestampStr
    kind: KindField
    correlation_id: UuidStr | None = None
    causation_id: UuidStr | None = None
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
        """A fresh event as zymi's `Event::new(..).with_correlation(..)` makes it (a record: its fields are
        checked here; pydantic is loaded only to word what does not fit)."""
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

    def to_json(self) -> str:
        """The exact `data` column text zymi would write for this event."""
        return json.dumps(self.envelope(), ensure_ascii=False, separators=(",", ":"))

    def raw_envelope(self) -> dict[str, Any]:
        """The envelope with the real sequence, as `events --raw` prints it."""
        env = self.envelope()
        env["sequence"] = self.sequence
        return env


class EventDecodeError(ValueError):
    """A row whose `data` cannot be read as an event (bad JSON, bad UUID, missing field)."""


def decode_event(data: str, sequence: int) -> Event:
    """Parse a `data` column. Unknown kinds decode; malformed rows raise `EventDecodeError`.

    Rejects what zymi's serde would: bad JSON, a missing field, a bad UUID or timestamp, a
    kind payload without its required fields. The fast path validates the JSON text in one
    pydantic-core pass; a row it rejects (an unknown kind, or a real error) is read again by
    `_decode_slowly`, which keeps unknown kinds and words the error.
    """
    from pydantic import ValidationError  # a reader of whole events (a writer never loads pydantic)

    try:
        event = _stored(Event.model_validate_json(data), sequence)
    except ValidationError:
        if has_undecodable_bytes(data):  # read with `surrogateescape`: bytes that were not UTF-8
            raise EventDecodeError(
                f"data is not valid UTF-8, near “{escape_controls(_around_bad_byte(data))}”"
            ) from None
        try:
            slow = _decode_slowly(data, sequence)
        except RecursionError:
            raise EventDecodeError("data nests too deeply to be read (JSON arrays/objects inside each other)") from None
        _refuse_lone_surrogates(data)
        return slow
    try:
        datetime.fromisoformat(event.timestamp[:19])  # the pattern checked the form; this checks the ranges
    except ValueError as e:
        raise EventDecodeError(f"timestamp: {e}") from None
    _refuse_lone_surrogates(data)
    return event


def _stored(event: Event, sequence: int) -> Event:
    """The event read from a row: its `sequence` column replaces the JSON's 0 (set in the event just made,
    before anything else sees it)."""
    event.__dict__["sequence"] = int(sequence)
    return event


def _refuse_lone_surrogates(data: str) -> None:
    """A `\\udXXX` escape that is not half of a pair is valid JSON syntax but no Unicode text: pydantic
    reads it as a lone surrogate, which no text can encode. zymi refuses such a row, as msgspec does."""
    if "\\ud" in data or "\\uD" in data:  # rare: zymi writes non-ASCII text as UTF-8, not as escapes
        try:
            msgspec.json.decode(data)
        except msgspec.DecodeError as e:
            raise EventDecodeError(str(e)) from None


def _around_bad_byte(text: str) -> str:
    """A few characters either side of the first byte that was not UTF-8."""
    i = next(i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff")
    return text[max(0, i - 12) : i + 4]


def _decode_slowly(data: str, sequence: int) -> Event:
    try:
        obj = json.loads(data)
    except ValueError as e:
        raise EventDecodeError(f"invalid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise EventDecodeError("the data is not a JSON object")
    where = "kind.data."
    try:
        kind = obj["kind"]
        type_name = kind["type"]
        if not isinstance(type_name, str):
            raise EventDecodeError("kind.type: expected a string")
        obj["kind"] = parse_kind(type_name, kind.get("data"))
        where = ""
        event = _stored(Event.model_validate(obj), sequence)
        datetime.fromisoformat(event.timestamp[:19])
        return event
    except KeyError as e:
        raise EventDecodeError(f"missing field {e}") from None
    except (TypeError, AttributeError) as e:
        raise EventDecodeError(f"malformed field: {e}") from None
    except Invalid as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        msg = first["msg"]
        if first["type"] == "string_pattern_mismatch":  # say what was expected, not the regex
            msg = "not an RFC 3339 timestamp" if loc == "timestamp" else "not a UUID"
            msg += f": {first['input']!r:.60}"
        raise EventDecodeError(f"{where}{loc}: {msg}") from None
    except ValueError as e:
        raise EventDecodeError(f"timestamp: {e}") from None
