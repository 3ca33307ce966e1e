"""OTLP trace messages, built with the OpenTelemetry project's own protobuf classes
(`opentelemetry-proto`): spans, their attributes, and the `ExportTraceServiceRequest` batches an
OTLP/HTTP collector takes as `application/x-protobuf` or a file holds as OTLP/JSON (one request a
line, as the OpenTelemetry Collector's file exporter writes them)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from zymi_tui import __version__

if TYPE_CHECKING:  # the protobuf classes are imported where a request is made: a file export never loads them
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

SCOPE = "zymi-tui"
BATCH_SPANS = 512  # spans a request carries (the OpenTelemetry SDK's default batch size)


class JsonArrayText:
    """A string attribute holding a JSON array (`gen_ai.input.messages`), kept as its items: each item's
    JSON text, and that text escaped as a JSON string's inside (`encode_basestring`, no quotes) in UTF-8.
    Escaping goes character by character, so the escaped whole is the escaped items put together: the
    OTLP/JSON writer writes the items' bytes (`quoted_parts`) and never makes the whole text, which only
    a push makes (`text`)."""

    __slots__ = ("items",)

    def __init__(self, items: Sequence[tuple[str, bytes]]) -> None:
        self.items = items

    def text(self) -> str:
        return f"[{','.join([t[0] for t in self.items])}]"

    def quoted_parts(self) -> tuple[bytes, bytes, bytes]:
        """The JSON string of `text()`, in UTF-8, in three pieces written one after the other."""
        return b'"[', b",".join([t[1] for t in self.items]), b']"'


AttrValue = str | int | float | bool | Sequence[str] | JsonArrayText | None
INTERNAL, CLIENT = 1, 3  # Span.SpanKind.SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT (tests/test_export_caches.py)


def any_value(value: str | int | float | bool | Sequence[str] | JsonArrayText) -> AnyValue:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue

    if isinstance(value, JsonArrayText):
        return AnyValue(string_value=value.text())
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    return AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=v) for v in value]))


def key_values(attrs: Mapping[str, AttrValue]) -> list[KeyValue]:
    """The attributes that have a value (None: left out)."""
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    return [KeyValue(key=k, value=any_value(v)) for k, v in attrs.items() if v is not None]


class SpanData(NamedTuple):
    """A span as the exporters make it, before it is written (`otlp_lines.span_json`) or pushed
    (`span_proto`): ids in hex (32 and 16 digits); `error`: the status message of a failed operation."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int  # Span.SpanKind: INTERNAL, CLIENT
    start_ns: int
    end_ns: int  # at least start_ns
    attrs: Mapping[str, AttrValue]
    error: str | None = None


def make_span(
    *,
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    name: str,
    kind: int,
    start_ns: int,
    end_ns: int,
    attrs: Mapping[str, AttrValue],
    error: str | None = None,
) -> SpanData:
    """A span; ids in hex (32 and 16 digits); `error`: the status message of a failed operation."""
    return SpanData(trace_id, span_id, parent_id, name, kind, start_ns, max(start_ns, end_ns), attrs, error)


def span_proto(s: SpanData) -> Span:
    """The span as the OpenTelemetry project's protobuf message (what a collector is sent)."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    status = Status(code=Status.STATUS_CODE_ERROR, message=s.error) if s.error is not None else Status()
    return Span(
        trace_id=bytes.fromhex(s.trace_id),
        span_id=bytes.fromhex(s.span_id),
        parent_span_id=bytes.fromhex(s.parent_id) if s.parent_id else b"",
        name=s.name,
        kind=cast(Span.SpanKind.ValueType, s.kind),
        start_time_unix_nano=s.start_ns,
        end_time_unix_nano=s.end_ns,
        attributes=key_values(s.attrs),
        status=status,
    )


def export_request(spans: Sequence[SpanData], resource: Mapping[str, AttrValue]) -> ExportTraceServiceRequest:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

    scope = InstrumentationScope(name=SCOPE, version=__version__)
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values(resource)),
                scope_spans=[ScopeSpans(scope=scope, spans=[span_proto(s) for s in spans])],
            )
        ]
    )


def resource_attributes(service: str) -> dict[str, AttrValue]:
    """`service.name`, and the Phoenix project the spans go to (`openinference.project.name`)."""
    return {"service.name": service, "openinference.project.name": service}


_IDS = ("traceId", "spanId", "parentSpanId")


def otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """OTLP/JSON: protobuf's JSON mapping (lowerCamelCase, 64-bit integers as strings, enums as
    numbers), with trace and span ids in hex, as OTLP/JSON requires (protobuf writes bytes in base64)."""
    from google.protobuf import json_format

    doc: dict[str, Any] = json_format.MessageToDict(request, use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in _IDS:
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return doc


class SpanBatcher:
    """Spans gathered into requests of `size` spans, each handed to `send` when full (and at `close`)."""

    def __init__(
        self,
        send: Callable[[ExportTraceServiceRequest], None],
        resource: Mapping[str, AttrValue],
        size: int = BATCH_SPANS,
    ) -> None:
        self.send, self.resource, self.size = send, dict(resource), size
        self.pending: list[SpanData] = []
        self.spans = 0

    def add(self, spans: Sequence[SpanData]) -> None:
        self.pending.extend(spans)
        self.spans += len(spans)
        if len(self.pending) >= self.size:
            self.flush()

    def flush(self) -> None:
        while self.pending:
            batch, self.pending = self.pending[: self.size], self.pending[self.size :]
            self.send(export_request(batch, self.resource))
