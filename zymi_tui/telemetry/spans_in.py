"""OTLP trace requests in: decoded with the OpenTelemetry project's own proto package, never by hand.

A request (`ExportTraceServiceRequest`, protobuf or OTLP/JSON) becomes a list of `InSpan`: ids in hex,
times in nanoseconds, attributes as plain Python values, the resource's `service.name`. Each span is
then classified by the conventions the instrumentations use (docs/telemetry-in.md#spans): a model
call (`chat`), an agent or workflow (`agent`), a tool execution (`tool`), or anything else.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

from zymi_tui.errors import UserError

CHAT, AGENT, TOOL, OTHER = "chat", "agent", "tool", "other"
CHAT_OPERATIONS = {"chat", "text_completion", "generate_content"}
AGENT_OPERATIONS = {"invoke_agent", "create_agent", "invoke_workflow"}
ID_FIELDS = ("traceId", "spanId", "parentSpanId")
HEX_ID = re.compile(r"^(?:[0-9a-fA-F]{16}|[0-9a-fA-F]{32})$")


class SpansError(UserError):
    """A trace request or file that cannot be read as OTLP; one line."""

    title = "Spans"


@dataclass
class InSpan:
    """One span as the mapping needs it."""

    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    service: str
    error: bool = False  # status code ERROR
    kind: str = field(default=OTHER, init=False)

    def __post_init__(self) -> None:
        self.kind = classify(self.attrs, self.name)


def classify(attrs: dict[str, Any], name: str) -> str:
    """`chat`, `agent`, `tool` or `other`, from the GenAI semantic conventions, OpenInference's
    `openinference.span.kind` or OpenLLMetry's `traceloop.span.kind` / `llm.request.type`."""
    op = attrs.get("gen_ai.operation.name")
    oi = str(attrs.get("openinference.span.kind", "")).upper()
    tl = str(attrs.get("traceloop.span.kind", "")).lower()
    if op in CHAT_OPERATIONS or oi == "LLM" or attrs.get("llm.request.type") in ("chat", "completion"):
        return CHAT
    if op == "execute_tool" or oi == "TOOL" or tl == "tool":
        return TOOL
    if op in AGENT_OPERATIONS or oi == "AGENT" or tl in ("agent", "workflow"):
        return AGENT
    return OTHER


def any_value(value: Any) -> Any:
    """An OTLP `AnyValue` (protobuf message) as a plain Python value."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if which == "int_value":
        return int(value.int_value)
    return getattr(value, which)


def spans_of(request: Any) -> list[InSpan]:
    """Every span of an `ExportTraceServiceRequest`."""
    out = []
    for rs in request.resource_spans:
        resource = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
        service = str(resource.get("service.name") or "unknown_service")
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    InSpan(
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_id=s.parent_span_id.hex() or None,
                        name=s.name,
                        start_ns=int(s.start_time_unix_nano),
                        end_ns=int(s.end_time_unix_nano),
                        attrs={kv.key: any_value(kv.value) for kv in s.attributes},
                        service=service,
                        error=s.status.code == 2,  # STATUS_CODE_ERROR
                    )
                )
    return out


def decode_protobuf(body: bytes) -> list[InSpan]:
    """An `application/x-protobuf` request body."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as e:
        raise SpansError(f"not an OTLP protobuf trace request: {e}") from None
    return spans_of(request)


def _ids_to_base64(node: Any) -> None:
    """OTLP/JSON writes ids as hex; protobuf's JSON parser reads bytes fields as base64."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_FIELDS and isinstance(value, str) and HEX_ID.match(value):
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            else:
                _ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _ids_to_base64(item)


def decode_json_object(obj: Any) -> list[InSpan]:
    """One OTLP/JSON `ExportTraceServiceRequest` already parsed from JSON."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    if not isinstance(obj, dict) or ("resourceSpans" not in obj and "resource_spans" not in obj):
        raise SpansError("not an OTLP/JSON trace request (no `resourceSpans`)")
    _ids_to_base64(obj)
    try:
        request = json_format.ParseDict(obj, ExportTraceServiceRequest(), ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as e:
        raise SpansError(f"not an OTLP/JSON trace request: {str(e).splitlines()[0]}") from None
    return spans_of(request)


def decode_json(body: bytes) -> list[InSpan]:
    """An `application/json` request body."""
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise SpansError(f"invalid JSON: {e}") from None
    return decode_json_object(obj)
