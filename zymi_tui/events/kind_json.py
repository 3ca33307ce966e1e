"""msgspec readers of each kind's JSON, derived from the one declaration of the kinds (`events.kinds`).

A reader of many rows (a replay, a search, a runs list, a plot) decodes a row's JSON with msgspec, in
one typed pass, into a struct made here from the kind's own fields (`msgspec.defstruct`): no kind's
fields are written a second time. `to_kind` then makes the kind itself from the struct, unchecked (the
struct was checked), so a fast reader and a whole-event reader hand out the same objects. A message
field is kept as JSON text and read by the one message model (`events.messages`); a record field
(`usage`, `via`) is decoded into a struct derived from its record in the same way.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from zymi_tui.events import kinds
from zymi_tui.events.messages import MessageModel, parse_message_json
from zymi_tui.events.row_envelope import Envelope, payload
from zymi_tui.record import MISSING, Record, builder, record_fields

NULL = msgspec.Raw(b"null")
EXTRA = "zymi_tui"  # the one extra field a fast reader keeps (what our engine records about a run)
_STRUCTS: dict[type[Record], Any] = {}  # a record's derived struct
_MESSAGE_TYPES = frozenset(typing.get_args(MessageModel))


def _is_message(t: Any) -> bool:
    """`t` is a message type (or one of them, or None)."""
    if typing.get_origin(t) is typing.Annotated:
        return _is_message(typing.get_args(t)[0])
    if t in _MESSAGE_TYPES:
        return True
    return typing.get_origin(t) in (typing.Union, types.UnionType) and any(_is_message(a) for a in typing.get_args(t))


def _json_type(t: Any) -> Any:
    """The msgspec type that reads what `t` reads from zymi's JSON (a message as its text)."""
    if _is_message(t):
        return msgspec.Raw
    if isinstance(t, type) and issubclass(t, Record):
        return struct_of(t)
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        mapped = tuple(_json_type(a) for a in args)
        if msgspec.Raw in mapped:  # msgspec reads no `Raw | None`: null is kept as text
            return msgspec.Raw
        return typing.Union[mapped]  # noqa: UP007
    if origin in (tuple, list, dict):
        return origin[tuple(_json_type(a) for a in args)] if args else origin
    return t


def _fields(cls: type[Record], names: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    for name, hint, default, factory in record_fields(cls):
        if names and name not in names:
            continue
        t = _json_type(hint)
        if factory is not None:
            out.append((name, t, msgspec.field(default_factory=factory)))
        elif default is not MISSING:
            out.append((name, t, NULL if t is msgspec.Raw and default is None else default))
        else:
            out.append((name, t, msgspec.NODEFAULT))
    return out


def struct_of(cls: type[Record], *names: str, extra: bool = False) -> Any:
    """A struct of `cls`'s fields (only `names` when given), typed as zymi's JSON holds them; with
    `extra`, the `zymi_tui` extra field too (UNSET when absent)."""
    if not names and not extra and cls in _STRUCTS:
        return _STRUCTS[cls]
    fields = _fields(cls, names)
    if extra:
        fields.append((EXTRA, Any, msgspec.UNSET))
    suffix = "Fields" if names else "Json"
    made = msgspec.defstruct(f"{cls.__name__}{suffix}", fields, frozen=True, kw_only=True)
    if not names and not extra:
        _STRUCTS[cls] = made
    return made


def _converter(t: Any) -> Callable[[Any], Any] | None:
    """How a value decoded as `_json_type(t)` becomes the value the record holds (None: as it is)."""
    if _is_message(t):
        if type(None) in typing.get_args(t):
            return lambda raw: None if raw == NULL else parse_message_json(bytes(raw))
        return lambda raw: parse_message_json(bytes(raw))
    for arg in (t, *typing.get_args(t)):
        if isinstance(arg, type) and issubclass(arg, Record):
            make = _maker(arg)
            return lambda v: None if v is None else make(v)
    return None


def _maker(cls: type[Record], extra: bool = False) -> Callable[[Any], Any]:
    """What makes the record `cls` from a struct decoded by `struct_of(cls, extra=extra)` (checked by
    msgspec: not again). Made once per class: a replay makes one for every row it reads."""
    converters = [(n, c) for n, h, _, _ in record_fields(cls) if (c := _converter(h)) is not None]
    build, asdict, unset = builder(cls), msgspec.structs.asdict, msgspec.UNSET

    def make(value: Any) -> Any:
        values = asdict(value)
        for name, convert in converters:
            values[name] = convert(values[name])
        return build(values, None)

    def make_with_extra(value: Any) -> Any:
        values = asdict(value)
        for name, convert in converters:
            values[name] = convert(values[name])
        found = values.pop(EXTRA)
        return build(values, None if found is unset else {EXTRA: found})

    return make_with_extra if extra else make


# the struct each known kind's `data` is decoded into: every field, and the `zymi_tui` extra
PAYLOADS: dict[str, Any] = {name: struct_of(cls, extra=True) for name, cls in kinds.KNOWN_KINDS.items()}
_KINDS = {name: _maker(cls, extra=True) for name, cls in kinds.KNOWN_KINDS.items()}


def to_kind(type_name: str, value: Any) -> kinds.EventData:
    """The kind `type_name` from its `PAYLOADS` struct."""
    kind: kinds.EventData = _KINDS[type_name](value)
    return kind


def envelope_decoder(type_name: str, payload: Any, envelope: Any = Envelope) -> msgspec.json.Decoder[Any]:
    """The whole row of one kind in one typed pass: `envelope`'s fields and checks, with the kind's
    `type` fixed and its `data` decoded as `payload`."""
    kind = msgspec.defstruct(f"{type_name}Kind", [("type", Literal[type_name]), ("data", payload)], frozen=True)
    fields = [(f.name, kind if f.name == "kind" else f.type, f.default) for f in msgspec.structs.fields(envelope)]
    return msgspec.json.Decoder(msgspec.defstruct(f"{type_name}Envelope", fields, frozen=True))


_ROWS: dict[str, msgspec.json.Decoder[Any]] = {}


def row_decoder(type_name: str) -> msgspec.json.Decoder[Any]:
    """The decoder of a whole row of the known kind `type_name` (made at its first use); KeyError for
    a kind not known."""
    found = _ROWS.get(type_name)
    if found is None:
        found = _ROWS[type_name] = envelope_decoder(type_name, PAYLOADS[type_name])
    return found


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def decoder_of(struct: Any) -> msgspec.json.Decoder[Any]:
    """A JSON decoder of `struct` (made once)."""
    found = _DECODERS.get(struct)
    if found is None:
        found = _DECODERS[struct] = msgspec.json.Decoder(struct)
    return found


def read_kind(env: Any) -> kinds.EventData:
    """The kind of a checked envelope (`row_envelope.envelope`, `row_envelope.run_envelope`) of a known
    kind, its payload decoded whole; raises `LeanError` for a payload that does not read, and KeyError
    for an unknown kind."""
    name = env.kind.type
    return to_kind(name, payload(env, decoder_of(PAYLOADS[name])))


# what a context plot reads of a call's completion and of a compaction: only these fields
LLM_CALL_COMPLETED = decoder_of(struct_of(kinds.LlmCallCompleted, "has_tool_calls", "usage"))
CONTEXT_COMPACTED = decoder_of(struct_of(kinds.ContextCompacted, "bytes_saved"))
