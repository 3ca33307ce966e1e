"""The JSON text of LHAR lines, written as `json.dumps(value, ensure_ascii=False)` writes it (context-lens
reads any JSON, but the same store must export the same bytes): one encoder for whole values, and
the text of single values (`value_text`) for the lines assembled from parts (lhar_entry.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from json.encoder import encode_basestring
from math import isfinite
from typing import Any

from zymi_tui.events.json_text import json_text
from zymi_tui.telemetry.export_calls import hex_id


def json_line(value: Any) -> bytes:
    """`json.dumps(value, ensure_ascii=False)` and a newline, in UTF-8: a line of an LHAR file (one
    encoder, made once; the data is a tree, so the circular check is left out)."""
    return (json_text(value) + "\n").encode()


def value_text(value: Any) -> str:
    """The JSON text `json.dumps(value, ensure_ascii=False)` gives one value: an int, a finite float, a
    string or None directly (as the encoder writes them: `int.__repr__`, `float.__repr__`, its string
    escaper), anything else through the encoder."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and isfinite(value):
        return float.__repr__(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    return json_text(value)


def items_text(value: list[Any]) -> str:
    """The items of a list as its JSON text holds them between its brackets ("" for none)."""
    return json_text(value)[1:-1]


_SECOND: list[Any] = [None, ""]  # the last second `iso` formatted, and its text (calls come in time order)


def iso(ns: int | None) -> str:
    if ns is None:
        return ""
    second = ns // 1_000_000_000
    if _SECOND[0] != second:
        _SECOND[:] = [second, datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_SECOND[1]}.{ns % 1_000_000_000 // 1_000_000:03d}Z"


def uuid_text(hex32: str) -> str:
    """`str(uuid.UUID(hex32))` of 32 lowercase hex digits: the 8-4-4-4-12 groups."""
    return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:]}"


def session_line(conversation: str, started_ns: int | None, model: str) -> dict[str, Any]:
    return {
        "type": "session",
        "trace_id": hex_id(f"session|{conversation}", 32),
        "started_at": iso(started_ns),
        "tool": "zymi",
        "model": model,
    }
