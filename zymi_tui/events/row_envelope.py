"""Reading only the fields a reader needs, straight from the stored JSON text.

Listing raw rows, pairing runs or filling the dashboard's runs list reads a few fields of many
rows: msgspec decodes just those, typed and checked, from the text, without building whole
events (`envelope.decode_event` validates every field of every kind, which is what a reader that
shows or writes a whole event needs). The envelope is checked as `decode_event` checks it
(UUIDs, an RFC 3339 timestamp in range, the field types); a kind's payload only where it is read.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Annotated, Any, TypeVar

import msgspec

from zymi_tui.events.patterns import TIMESTAMP_PATTERN, UUID_PATTERN

T = TypeVar("T")

Uuid = Annotated[str, msgspec.Meta(pattern=UUID_PATTERN)]
Timestamp = Annotated[str, msgspec.Meta(pattern=TIMESTAMP_PATTERN)]


class LeanError(ValueError):
    """A row whose envelope (or the payload a reader asked for) cannot be read."""


class Kind(msgspec.Struct, frozen=True):
    type: str
    data: msgspec.Raw = msgspec.Raw(b"null")  # left as text unless a reader decodes it


class Envelope(msgspec.Struct, frozen=True):
    id: Uuid
    stream_id: str
    timestamp: Timestamp
    kind: Kind
    source: str
    sequence: int = 0
    correlation_id: Uuid | None = None
    causation_id: Uuid | None = None


def _derived(name: str, types: dict[str, Any], keep: tuple[str, ...] = ()) -> Any:
    """`Envelope` with the fields in `types` typed anew (only those in `keep`, when given)."""
    fields = [(f.name, types.get(f.name, f.type), f.default) for f in msgspec.structs.fields(Envelope)]
    return msgspec.defstruct(name, [f for f in fields if not keep or f[0] in keep], frozen=True)


# the same checks with the UUIDs parsed in C (the common forms): twice as fast as the patterns
_UuidEnvelope = _derived("UuidEnvelope", {"id": uuid.UUID, "correlation_id": uuid.UUID | None,
                                          "causation_id": uuid.UUID | None})  # fmt: skip


_ENVELOPE = msgspec.json.Decoder(Envelope)
_UUID_ENVELOPE = msgspec.json.Decoder(_UuidEnvelope)
# ValueError includes a str holding undecodable bytes (surrogateescape); RecursionError, JSON nested
# deeper than the decoder's stack
DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError)


def _lean_error(e: BaseException) -> LeanError:
    """One of `DECODE_ERRORS` worded for a person."""
    if isinstance(e, UnicodeError):
        return LeanError("data is not valid UTF-8")
    if isinstance(e, RecursionError):
        return LeanError("data nests too deeply to be read (JSON arrays/objects inside each other)")
    return LeanError(str(e))


def envelope(data: str | bytes) -> Envelope:
    """The checked envelope of a `data` column, its fields as stored; the kind's payload is not decoded."""
    if not isinstance(data, str):
        raise LeanError("the data column is not text")
    try:
        env = _ENVELOPE.decode(data)
        datetime.fromisoformat(env.timestamp[:19])
    except DECODE_ERRORS as e:
        raise _lean_error(e) from None
    return env


def checked_stream_id(data: str | bytes) -> str:
    """Check a `data` column's envelope as `envelope` does (faster) and return its stream id."""
    if not isinstance(data, str):
        raise LeanError("the data column is not text")
    try:
        env = _UUID_ENVELOPE.decode(data)
        datetime.fromisoformat(env.timestamp[:19])
    except DECODE_ERRORS:
        return envelope(data).stream_id  # a braced or urn: UUID, or an error worded by the full check
    stream_id: str = env.stream_id
    return stream_id


def payload(env: Any, decoder: msgspec.json.Decoder[T]) -> T:
    """The kind's payload, decoded with `decoder` (the fields a reader needs)."""
    try:
        return decoder.decode(env.kind.data)
    except DECODE_ERRORS as e:
        raise LeanError(f"kind.data: {_lean_error(e)}") from None


def with_sequence(data: str, stream_id: str, sequence: int) -> str:
    """A checked row's stored text with the store's sequence for the `0` it holds: zymi's `--raw` line.

    The text is passed through untouched when it starts as zymi writes it (`{"id":"..",` then the
    stream id, unescaped, then `"sequence":0,`); any other layout is parsed and written back compact.
    """
    end_of_id = data.find('"', 7)  # a checked id holds no quote
    tail = f',"stream_id":"{stream_id}","sequence":'
    at = end_of_id + 1 + len(tail)
    if data.startswith('{"id":"') and data.startswith(tail, end_of_id + 1) and data.startswith("0,", at):
        return f"{data[:at]}{sequence}{data[at + 1 :]}"
    obj = json.loads(data)
    obj["sequence"] = sequence
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# -- what a runs list or a plot reads -----------------------------------------------------------------
# the envelope's stream, time, kind and correlation: the ids are compared, never checked (the
# timestamp is parsed, which checks it)
RunEnvelope = _derived("RunEnvelope", {"timestamp": str, "correlation_id": str | None},
                       ("stream_id", "timestamp", "kind", "correlation_id"))  # fmt: skip
_RUN_ENVELOPE = msgspec.json.Decoder(RunEnvelope)


def run_envelope(data: str | bytes) -> Any:
    if not isinstance(data, str):
        raise LeanError("the data column is not text")
    try:
        return _RUN_ENVELOPE.decode(data)
    except DECODE_ERRORS as e:
        raise _lean_error(e) from None
