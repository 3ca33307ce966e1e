"""A minimal OTLP/HTTP receiver for tests: records each POST to /v1/traces (decoded with
opentelemetry-proto) and answers with the statuses it is given, in order (then 200)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span


@dataclass
class Sink:
    url: str
    statuses: list[int]
    requests: list[tuple[str, str, ExportTraceServiceRequest | None]] = field(default_factory=list)  # path, type, body

    @property
    def spans(self) -> list[Span]:
        return [
            s for _, _, r in self.requests if r for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
        ]


@contextmanager
def otlp_sink(statuses: list[int] | None = None) -> Iterator[Sink]:
    sink = Sink("", list(statuses or []))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                status = sink.statuses.pop(0) if sink.statuses else 200
                body = None
                if status == 200:
                    body = ExportTraceServiceRequest()
                    body.ParseFromString(data)
                sink.requests.append((self.path, self.headers.get("Content-Type", ""), body))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sink.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()
