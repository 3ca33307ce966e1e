"""msgspec readers of a stored row, derived from the one declaration of the kinds and the envelope
(`events.kinds`).

A row of a known kind is decoded in one typed pass (`row_decoder`): the envelope's fields and checks,
the kind's `type` fixed, its `data` decoded straight into the kind's own struct, so a whole-event
reader, a replay and a search hand out the same objects. A reader of a few fields of many rows (a
plot) decodes a partial view (`fields_of`: `msgspec.defstruct` over some of a kind's fields), never a
second declaration of them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from zymi_tui.events import row_envelope
from zymi_tui.events.kinds import KNOWN_KINDS, ContextCompacted, EventData, LlmCallCompleted
from zymi_tui.events.messages import decode_hook
from zymi_tui.events.row_envelope import DECODE_ERRORS, payload


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return msgspec.field(default_factory=field.default_factory)
    return field.default


def fields_of(cls: type[msgspec.Struct], *names: str) -> Any:
    """A struct of only the fields `names` of `cls`, of their declared types and defaults."""
    fields = [(f.name, f.type, _default(f)) for f in msgspec.structs.fields(cls) if f.name in names]
    return msgspec.defstruct(f"{cls.__name__}Fields", fields, frozen=True, kw_only=True)


def envelope_decoder(type_name: str, data_type: Any, envelope: Any = None) -> msgspec.json.Decoder[Any]:
    """The whole row of one kind in one typed pass: `envelope`'s fields and checks (default: the stored
    envelope, `row_envelope.Envelope`), with the kind's `type` fixed and its `data` decoded as `data_type`."""
    if envelope is None:
        envelope = row_envelope.Envelope
    kind = msgspec.defstruct(f"{type_name}Kind", [("type", Literal[type_name]), ("data", data_type)], frozen=True)
    fields = [(f.name, kind if f.name == "kind" else f.type, _default(f)) for f in msgspec.structs.fields(envelope)]
    row = msgspec.defstruct(f"{type_name}Envelope", fields, frozen=True, kw_only=True)
    return msgspec.json.Decoder(row, dec_hook=decode_hook)


_ROWS: dict[str, msgspec.json.Decoder[Any]] = {}


def row_decoder(type_name: str) -> msgspec.json.Decoder[Any]:
    """The decoder of a whole row of the known kind `type_name` (made at its first use); KeyError for
    a kind not known."""
    found = _ROWS.get(type_name)
    if found is None:
        found = _ROWS[type_name] = envelope_decoder(type_name, KNOWN_KINDS[type_name])
    return found


_PLAIN_ROWS: dict[str, msgspec.json.Decoder[Any]] = {}


def plain_row_decoder(type_name: str) -> msgspec.json.Decoder[Any]:
    """`row_decoder` with the envelope's ids and timestamp left unchecked (`plain_envelope_type`): its
    caller checks them (`plain_forms`), and decodes with `row_decoder` any row whose values it doubts."""
    found = _PLAIN_ROWS.get(type_name)
    if found is None:
        plain = row_envelope.plain_envelope_type()
        found = _PLAIN_ROWS[type_name] = envelope_decoder(type_name, KNOWN_KINDS[type_name], plain)
    return found


def decode_row(type_name: str, data: str) -> Any | None:
    """A row of the known kind `type_name` in one typed pass, every check of its envelope made (the
    timestamp's ranges too); None for a row these checks refuse or of another kind, which
    `envelope.decode_event` then reads or words."""
    try:
        env = row_decoder(type_name).decode(data)
        datetime.fromisoformat(env.timestamp[:19])  # the pattern checked the form; this checks the ranges
    except (KeyError, *DECODE_ERRORS):
        return None
    return env


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def decoder_of(struct: Any) -> msgspec.json.Decoder[Any]:
    """A JSON decoder of `struct` (made once)."""
    found = _DECODERS.get(struct)
    if found is None:
        found = _DECODERS[struct] = msgspec.json.Decoder(struct, dec_hook=decode_hook)
    return found


def read_kind(env: Any) -> EventData:
    """The kind of a checked envelope (`row_envelope.envelope`, `row_envelope.run_envelope`) of a known
    kind, its payload decoded whole; raises `LeanError` for a payload that does not read, and KeyError
    for an unknown kind."""
    kind: EventData = payload(env, decoder_of(KNOWN_KINDS[env.kind.type]))
    return kind


_KIND_AT = '"kind":{"type":"'  # where zymi writes the kind's name


def type_name_at(data: str) -> str:
    """The kind's name as zymi lays the row out ('' if it is not found): only a guess, which the typed
    decoder then checks."""
    at = data.find(_KIND_AT)
    if at < 0:
        return ""
    at += len(_KIND_AT)
    return data[at : data.find('"', at)]


# what a context plot reads of a call's completion and of a compaction: only these fields, derived at
# their first use (a `run` loads this module with its context builder and never reads a plot)
_PLOT_FIELDS: dict[str, tuple[type[msgspec.Struct], tuple[str, ...]]] = {
    "LLM_CALL_COMPLETED": (LlmCallCompleted, ("has_tool_calls", "usage")),
    "CONTEXT_COMPACTED": (ContextCompacted, ("bytes_saved",)),
}


def __getattr__(name: str) -> Any:
    """`LLM_CALL_COMPLETED` and `CONTEXT_COMPACTED`: the decoders of a plot's fields (made once)."""
    if name in _PLOT_FIELDS:
        kind, names = _PLOT_FIELDS[name]
        found = globals()[name] = decoder_of(fields_of(kind, *names))
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
