"""Pushing OTLP trace requests to an OTLP/HTTP collector (`POST {endpoint}/v1/traces`, protobuf), as
the OpenTelemetry exporters do: a refused request is retried after a back-off when the collector
says it may succeed later (429, 502, 503, 504, or no connection), and stops the export otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from zymi_tui.errors import UserError

if TYPE_CHECKING:  # httpx is imported when a pusher is made: an export to a file never loads it
    import httpx
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

RETRYABLE = frozenset({429, 502, 503, 504})  # the OTLP/HTTP specification's retryable statuses
ATTEMPTS = 5
FIRST_DELAY_S = 0.5
TIMEOUT_S = 10.0


class PushError(UserError):
    """The collector refused the spans, or could not be reached."""

    title = "OTLP push"


def traces_url(endpoint: str) -> str:
    """`http://host:4318` -> `http://host:4318/v1/traces`; a URL already ending in `/v1/traces` is kept."""
    url = endpoint.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise PushError(f"--endpoint {endpoint}: give an http:// or https:// URL, e.g. http://127.0.0.1:6006")
    return url if url.endswith("/v1/traces") else f"{url}/v1/traces"


def _why(response: httpx.Response) -> str:
    text = " ".join(response.text.split())[:200]
    return f"HTTP {response.status_code} {response.reason_phrase}" + (f": {text}" if text else "")


class OtlpPusher:
    """Sends each request it is given; counts what the collector accepted."""

    def __init__(
        self,
        endpoint: str,
        *,
        headers: dict[str, str] | None = None,
        attempts: int = ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        self.url = traces_url(endpoint)
        self.client = httpx.Client(timeout=TIMEOUT_S, headers=headers or {})
        self.attempts, self.sleep = attempts, sleep
        self.requests = self.spans = 0

    def __call__(self, request: ExportTraceServiceRequest) -> None:
        import httpx

        data = request.SerializeToString()
        delay = FIRST_DELAY_S
        for attempt in range(1, self.attempts + 1):
            last = attempt == self.attempts
            try:
                response = self.client.post(self.url, content=data, headers={"Content-Type": "application/x-protobuf"})
            except httpx.HTTPError as e:
                if last:
                    raise PushError(f"{self.url}: no answer after {attempt} tries ({type(e).__name__}: {e})") from None
            else:
                if response.is_success:
                    self.requests += 1
                    self.spans += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
                    return
                if response.status_code not in RETRYABLE:
                    raise PushError(f"{self.url} refused the spans: {_why(response)}")
                if last:
                    raise PushError(f"{self.url} refused the spans {attempt} times: {_why(response)}")
                after = response.headers.get("Retry-After", "")
                delay = max(delay, float(after)) if after.isdigit() else delay
            self.sleep(delay)
            delay *= 2

    def close(self) -> None:
        self.client.close()
