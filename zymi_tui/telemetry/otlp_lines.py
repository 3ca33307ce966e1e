"""OTLP/JSON lines written span by span: one `ExportTraceServiceRequest` a line, `BATCH_SPANS` spans
a line, as the OpenTelemetry Collector's file exporter writes them, each span's text written as soon
as the span is made (nothing but the open line's count is held), in UTF-8 to a binary file: a call's
input messages (`JsonArrayText`) go out as their messages' bytes, made once per message, never as one
text copied, joined and encoded again per span.

The text is protobuf's JSON mapping of the request (`otlp_wire.otlp_json`: lowerCamelCase keys in
field-number order, fields at their default left out, 64-bit integers as strings, enums as numbers,
ids in hex) put in compact JSON, written here directly: going through protobuf messages and
`json_format` cost more than the rest of the export together.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring as quoted
from typing import BinaryIO

from zymi_tui import __version__
from zymi_tui.events.json_text import quoted_utf8
from zymi_tui.telemetry.otlp_wire import BATCH_SPANS, SCOPE, AttrValue, JsonArrayText, SpanData

STATUS_OK, STATUS_ERROR = "{}", 2  # an unset Status; STATUS_CODE_ERROR


def _double(v: float) -> str:
    if math.isfinite(v):
        return repr(v)
    return '"NaN"' if math.isnan(v) else '"Infinity"' if v > 0 else '"-Infinity"'


def any_value_json(value: str | int | float | bool | Sequence[str] | JsonArrayText) -> str:
    """An `AnyValue` (the branches in `otlp_wire.any_value`'s order)."""
    if isinstance(value, JsonArrayText):
        return '{"stringValue":' + quoted(value.text()) + "}"
    if isinstance(value, str):
        return '{"stringValue":' + quoted(value) + "}"
    if isinstance(value, bool):
        return '{"boolValue":true}' if value else '{"boolValue":false}'
    if isinstance(value, int):
        return '{"intValue":"' + str(int(value)) + '"}'
    if isinstance(value, float):
        return '{"doubleValue":' + _double(value) + "}"
    if not value:
        return '{"arrayValue":{}}'
    return '{"arrayValue":{"values":[' + ",".join('{"stringValue":' + quoted(v) + "}" for v in value) + "]}}"


_KEYS: dict[str, str] = {}  # attribute names as JSON key-value openings, each after a comma (a few dozen)
_PAIRS: dict[tuple[str, str | bool], str] = {}  # repeating texts and flags as whole key-values, comma first
MAX_PAIRS = 1 << 11  # then the kept key-values are let go (a store of many runs has many stream ids)
# the attributes whose texts come back span after span (a call id, arguments or a result do not)
REPEATING = frozenset({
    "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.conversation.id",
    "gen_ai.agent.name", "gen_ai.tool.name", "gen_ai.tool.type", "openinference.span.kind", "error.type",
    "zymi.stream_id", "zymi.step", "service.name", "openinference.project.name",
})  # fmt: skip


def _head(k: str) -> str:
    head = _KEYS.get(k)
    if head is None:
        head = ',{"key":' + quoted(k) + ',"value":'
        if len(_KEYS) < 4096:
            _KEYS[k] = head
    return head


def _pair(k: str, v: str | bool) -> str:
    text = _head(k) + any_value_json(v) + "}"
    if len(_PAIRS) >= MAX_PAIRS:
        _PAIRS.clear()
    _PAIRS[(k, v)] = text
    return text


INLINE_CHARS = 64  # a longer text value is written as its own UTF-8 piece (`attribute_parts`)
Utf8 = list[tuple[int, Sequence[bytes]]]  # pieces kept in UTF-8, each with its place among a span's parts


def attribute_parts(parts: list[str], attrs: Mapping[str, AttrValue], utf8: Utf8) -> None:
    """The attributes that have a value (None: left out) as the items of a JSON array, appended to
    `parts` in pieces to be joined with nothing between them (commas included). The string of a
    `JsonArrayText`, or of a text longer than `INLINE_CHARS` that does not repeat, is not written
    there: an empty piece holds its place, and (place, its pieces in UTF-8) goes to `utf8` (never
    joined with the rest, nor widened by it: a non-ASCII text makes a joined str 2 or 4 bytes a character)."""
    at = len(parts)
    keys, pairs = _KEYS, _PAIRS
    for k, v in attrs.items():
        if v is None:
            continue
        t = type(v)
        if t is str:
            if k in REPEATING:
                parts.append(pairs.get((k, v)) or _pair(k, v))  # type: ignore[arg-type]
            elif len(v) > INLINE_CHARS:  # type: ignore[arg-type]
                parts += (keys.get(k) or _head(k), '{"stringValue":')
                utf8.append((len(parts), (quoted_utf8(v),)))  # type: ignore[arg-type]
                parts += ("", "}}")
            else:
                parts.append(f'{keys.get(k) or _head(k)}{{"stringValue":{quoted(v)}}}}}')  # type: ignore[arg-type]
        elif t is int:
            parts.append(f'{keys.get(k) or _head(k)}{{"intValue":"{v}"}}}}')
        elif t is bool:
            parts.append(pairs.get((k, v)) or _pair(k, v))  # type: ignore[arg-type]
        elif t is JsonArrayText:
            parts += (keys.get(k) or _head(k), '{"stringValue":')
            utf8.append((len(parts), v.quoted_parts()))  # type: ignore[union-attr]
            parts += ("", "}}")
        else:
            parts.append(f"{keys.get(k) or _head(k)}{any_value_json(v)}}}")
    if len(parts) > at:
        parts[at] = parts[at][1:]  # the first key-value without its comma


def attributes_json(attrs: Mapping[str, AttrValue]) -> str:
    """The attributes that have a value (None: left out), as the items of a JSON array."""
    parts: list[str] = []
    utf8: Utf8 = []
    attribute_parts(parts, attrs, utf8)
    for at, pieces in utf8:
        parts[at] = b"".join(pieces).decode()
    return "".join(parts)


def span_chunks(s: SpanData, lead: str) -> list[bytes]:
    """`lead` and one span as OTLP/JSON (compact, the fields protobuf's JSON mapping writes, in its
    order), in UTF-8: one piece, or a few around the pieces `attribute_parts` leaves in UTF-8."""
    parts = [lead, '{"traceId":"', s.trace_id, '","spanId":"', s.span_id, '"']
    if s.parent_id:
        parts += [',"parentSpanId":"', s.parent_id, '"']
    if s.name:
        parts += [',"name":', quoted(s.name)]
    if s.kind:
        parts.append(f',"kind":{s.kind}')
    if s.start_ns:
        parts.append(f',"startTimeUnixNano":"{s.start_ns}"')
    if s.end_ns:
        parts.append(f',"endTimeUnixNano":"{s.end_ns}"')
    utf8: Utf8 = []
    if s.attrs:
        at = len(parts)
        parts.append(',"attributes":[')
        attribute_parts(parts, s.attrs, utf8)
        if len(parts) == at + 1:  # every value None: no attributes
            parts.pop()
        else:
            parts.append("]")
    if s.error is None:
        parts.append(',"status":{}}')
    elif s.error:
        parts += [',"status":{"message":', quoted(s.error), f',"code":{STATUS_ERROR}}}}}']
    else:
        parts.append(f',"status":{{"code":{STATUS_ERROR}}}}}')
    if not utf8:
        return ["".join(parts).encode()]
    out: list[bytes] = []
    start = 0
    for at, pieces in utf8:
        out.append("".join(parts[start:at]).encode())
        out += pieces
        start = at + 1
    out.append("".join(parts[start:]).encode())
    return out


def span_json(s: SpanData) -> str:
    """One span as OTLP/JSON text (`span_chunks`, decoded)."""
    return b"".join(span_chunks(s, "")).decode()


def line_head(resource: Mapping[str, AttrValue]) -> str:
    """What a line holds before its first span: the resource and the instrumentation scope."""
    attrs = attributes_json(resource)
    res = '{"attributes":[' + attrs + "]}" if attrs else "{}"
    scope = '{"name":' + quoted(SCOPE) + ',"version":' + quoted(__version__) + "}"
    return '{"resourceSpans":[{"resource":' + res + ',"scopeSpans":[{"scope":' + scope + ',"spans":['


LINE_TAIL = "]}]}]}\n"
LINE_TAIL_UTF8 = LINE_TAIL.encode()


class OtlpJsonLines:
    """Writes spans to `out` (binary: UTF-8 is written) as they are added: a line is opened with its
    first span and closed at its `size`-th (or at `flush`)."""

    def __init__(self, out: BinaryIO, resource: Mapping[str, AttrValue], size: int = BATCH_SPANS) -> None:
        self.out, self.head, self.size = out, line_head(resource), size
        self.in_line = 0  # spans written to the open line
        self.spans = 0

    def add_lines(self, spans: BinaryIO) -> None:
        """Spans another process wrote (`SpanLines`), a span a line, each written here as `add` writes a span."""
        write, head = self.out.write, self.head.encode()
        for line in spans:
            write(head if self.in_line == 0 else b",")
            write(line[:-1])
            self.in_line += 1
            self.spans += 1
            if self.in_line == self.size:
                write(LINE_TAIL_UTF8)
                self.in_line = 0

    def add(self, spans: Sequence[SpanData]) -> None:
        write = self.out.write
        for s in spans:
            for chunk in span_chunks(s, self.head if self.in_line == 0 else ","):
                write(chunk)
            self.in_line += 1
            if self.in_line == self.size:
                write(LINE_TAIL_UTF8)
                self.in_line = 0
        self.spans += len(spans)

    def flush(self) -> None:
        """Close the open line (the spans so far are out: `--follow` calls it when idle)."""
        if self.in_line:
            self.out.write(LINE_TAIL_UTF8)
            self.in_line = 0
        self.out.flush()


class SpanLines:
    """Spans written to `out` as OTLP/JSON a span a line, with no line head (`OtlpJsonLines.add_lines` puts
    them in its lines): a span's text holds no line break (JSON escapes it in a string)."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.spans = 0

    def add(self, spans: Sequence[SpanData]) -> None:
        write = self.out.write
        for s in spans:
            for chunk in span_chunks(s, ""):
                write(chunk)
            write(b"\n")
        self.spans += len(spans)

    def flush(self) -> None:
        self.out.flush()
