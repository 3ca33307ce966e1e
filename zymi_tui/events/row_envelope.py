"""Reading only the fields a reader needs, straight from the stored JSON text.

Listing raw rows, pairing runs or filling the dashboard's runs list reads a few fields of many
rows: msgspec decodes just those, typed and checked, from the text, without building whole
events (`envelope.decode_event` validates every field of every kind, which is what a reader that
shows or writes a whole event needs). The envelope is checked as `decode_event` checks it
(UUIDs, an RFC 3339 timestamp in range, the field types); a kind's payload only where it is read.
"""

from __future__ import annotations

import functools
import json
import uuid
from datetime import datetime
from typing import Any, TypeVar

import msgspec

from zymi_tui.events.kinds import Event

T = TypeVar("T")


class LeanError(ValueError):
    """A row whose envelope (or the payload a reader asked for) cannot be read."""


class Kind(msgspec.Struct, frozen=True):
    type: str
    data: msgspec.Raw = msgspec.Raw(b"null")  # left as text unless a reader decodes it


def _derived(name: str, types: dict[str, Any], keep: tuple[str, ...] = ()) -> Any:
    """`kinds.Event` with the fields in `types` typed anew (only those in `keep`, when given), and its
    `kind` as `Kind`."""
    types = {"kind": Kind, **types}
    fields = [(f.name, types.get(f.name, f.type), f.default) for f in msgspec.structs.fields(Event)]
    return msgspec.defstruct(name, [f for f in fields if not keep or f[0] in keep], frozen=True, kw_only=True)


# The derived envelopes and their decoders are made at their first use, not at import: a `run` loads this
# module with its context builder and never decodes a stored row (~5 M instructions spared).


@functools.cache
def _envelope_type() -> Any:
    """The envelope as stored, its fields checked as `decode_event` checks them, the kind's payload left
    as text (`Envelope`)."""
    return _derived("Envelope", {})


@functools.cache
def plain_envelope_type() -> Any:
    """The envelope with its ids and timestamp read as any text: for a reader that checks a batch of
    them at once (`plain_forms`) and decodes with `Envelope` whatever that check refuses."""
    return _derived("PlainEnvelope", {"id": str, "timestamp": str, "correlation_id": str | None,
                                      "causation_id": str | None})  # fmt: skip


@functools.cache
def _envelope_decoder() -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(_envelope_type())


@functools.cache
def _uuid_envelope_decoder() -> msgspec.json.Decoder[Any]:
    """The same checks with the UUIDs parsed in C (the common forms): twice as fast as the patterns."""
    uuids = {"id": uuid.UUID, "correlation_id": uuid.UUID | None, "causation_id": uuid.UUID | None}
    return msgspec.json.Decoder(_derived("UuidEnvelope", uuids))


# ValueError includes a str holding undecodable bytes (surrogateescape); RecursionError, JSON nested
# deeper than the decoder's stack
DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError)


def _lean_error(e: BaseException) -> LeanError:
    """One of `DECODE_ERRORS` worded for a person: what was expected of a field, not its regex."""
    if isinstance(e, UnicodeError):
        return LeanError("data is not valid UTF-8")
    if isinstance(e, RecursionError):
        return LeanError("data nests too deeply to be read (JSON arrays/objects inside each other)")
    if isinstance(e, msgspec.DecodeError) and not isinstance(e, msgspec.ValidationError):
        return LeanError(f"invalid JSON: {e}")
    text = str(e)
    if "matching regex" in text:  # a pattern of the envelope: a UUID or the timestamp
        where = text.rpartition("`$.")[2].rstrip("`")
        return LeanError(f"{where}: {'not an RFC 3339 timestamp' if where == 'timestamp' else 'not a UUID'}")
    return LeanError(text)


def _checked(decoder: msgspec.json.Decoder[T], data: str | bytes) -> T:
    """`data` decoded by `decoder` (an envelope), its timestamp's ranges checked too."""
    if not isinstance(data, str):
        raise LeanError("the data column is not text")
    try:
        env = decoder.decode(data)
    except DECODE_ERRORS as e:
        raise _lean_error(e) from None
    try:
        datetime.fromisoformat(env.timestamp[:19])  # type: ignore[attr-defined]  # every envelope has one
    except ValueError as e:
        raise LeanError(f"timestamp: {e}") from None
    return env


def envelope(data: str | bytes) -> Any:
    """The checked envelope of a `data` column, its fields as stored; the kind's payload is not decoded."""
    return _checked(_envelope_decoder(), data)


def checked_stream_id(data: str | bytes) -> str:
    """Check a `data` column's envelope as `envelope` does (faster) and return its stream id."""
    try:
        env = _checked(_uuid_envelope_decoder(), data)
    except LeanError:
        env = envelope(data)  # a braced or urn: UUID, or an error worded by the full check
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
@functools.cache
def _run_envelope_type() -> Any:
    """`RunEnvelope`."""
    return _derived("RunEnvelope", {"timestamp": str, "correlation_id": str | None},
                    ("stream_id", "timestamp", "kind", "correlation_id"))  # fmt: skip


@functools.cache
def _run_envelope_decoder() -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(_run_envelope_type())


def run_envelope(data: str | bytes) -> Any:
    if not isinstance(data, str):
        raise LeanError("the data column is not text")
    try:
        return _run_envelope_decoder().decode(data)
    except DECODE_ERRORS as e:
        raise _lean_error(e) from None


_LAZY = {"Envelope": _envelope_type, "RunEnvelope": _run_envelope_type}


def __getattr__(name: str) -> Any:
    """`Envelope` and `RunEnvelope`, derived at their first use."""
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
