"""`collect`'s door: an OTLP/HTTP trace receiver (`POST /v1/traces`, protobuf or JSON, gzip or not).

Hardened like `serve`'s `http_inbound` (zymi_tui/http_request.py): a bounded head, the body's length
checked before it is read, head and request timeouts, a cap on open connections. On loopback by
default; bound elsewhere it needs a bearer token. A request naming a foreign `Host` (DNS rebinding) or
carrying a foreign `Origin` (a web page posting to it) is refused before its body is read.
Each accepted batch is written into the store before it is answered, one batch at a time.
"""

from __future__ import annotations

import asyncio
import hmac
import zlib
from collections.abc import Callable

from zymi_tui.errors import UserError
from zymi_tui.http_request import (
    Head,
    OneRequestDoor,
    Refusal,
    Reply,
    body_length,
    foreign_site,
    is_loopback,
    read_body,
    read_head,
)
from zymi_tui.telemetry.spans_in import InSpan, SpansError, decode_json, decode_protobuf
from zymi_tui.telemetry.spans_store import SpanSink

TRACES_PATH = "/v1/traces"
MAX_OTLP_BODY = 16 * 1024 * 1024  # as received (compressed or not)
MAX_INFLATED = 64 * 1024 * 1024  # a gzip body once inflated
PROTOBUF, JSON = "application/x-protobuf", "application/json"


class CollectError(UserError):
    """The receiver cannot start; one line."""

    title = "Collect"


def check_binding(host: str, token: str | None) -> None:
    """Beyond loopback, a token is required."""
    if not is_loopback(host) and not token:
        raise CollectError(
            f"--host {host} is not loopback: a token is required (--token or ZYMI_TUI_COLLECT_TOKEN), "
            "sent by the exporter as `Authorization: Bearer <token>`"
        )


def inflate(body: bytes) -> bytes:
    """A gzip body, inflated up to MAX_INFLATED bytes (413 past it: no bomb is inflated whole)."""
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(body, MAX_INFLATED)
        if d.unconsumed_tail:
            raise Refusal(413, "payload_too_large", f"the body inflates past {MAX_INFLATED} bytes")
        if not d.eof:
            raise Refusal(400, "bad_request", "truncated gzip body")
    except zlib.error as e:
        raise Refusal(400, "bad_request", f"invalid gzip body: {e}") from None
    return out


class Collector(OneRequestDoor):
    """Listens on `host:port` and hands every batch of spans to `sink`."""

    def __init__(
        self,
        sink: SpanSink | None,
        host: str,
        port: int,
        token: str | None,
        say: Callable[[str], None] = lambda s: None,
    ) -> None:
        """`sink` may be given after `start` (the store is opened once the port is bound)."""
        check_binding(host, token)
        super().__init__(host, port)
        self.sink, self.token, self.say = sink, token, say
        self.lock = asyncio.Lock()  # batches are written one at a time, in arrival order

    async def start(self) -> None:
        try:
            await self.listen()
        except OSError as e:
            raise CollectError(f"cannot listen on {self.host}:{self.port}: {e.strerror or e}") from None

    @property
    def endpoint(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{TRACES_PATH}"

    def refused(self, status: int, payload: dict[str, str] | None) -> None:
        self.say(f"refused ({status}): {payload['detail'] if payload else ''}")

    def _foreign(self, head: Head) -> str | None:
        """Why the request's Host or Origin is not this receiver (None: they are)."""
        return foreign_site(head, self.host, self.port)

    async def respond(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Reply:
        """Everything decidable on the head (path, method, Host, Origin, token, type, size) is decided
        before the body is read."""
        head = await asyncio.wait_for(read_head(reader), self.head_timeout)
        if head.path != TRACES_PATH:
            raise Refusal(404, "not_found", f"only POST {TRACES_PATH} is served")
        if head.method != "POST":
            raise Refusal(405, "method_not_allowed", f"only POST {TRACES_PATH} is served")
        foreign = self._foreign(head)
        if foreign:
            raise Refusal(403, "forbidden", foreign)
        if self.token and not hmac.compare_digest(head.headers.get("authorization", ""), f"Bearer {self.token}"):
            raise Refusal(401, "unauthorized", "authentication failed")
        content_type = head.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type not in (PROTOBUF, JSON):
            raise Refusal(415, "unsupported_media_type", f"content-type must be {PROTOBUF} or {JSON}")
        encoding = head.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip"):
            raise Refusal(415, "unsupported_media_type", f"content-encoding `{encoding}`: only gzip is read")
        body = await read_body(reader, body_length(head, MAX_OTLP_BODY), MAX_OTLP_BODY)
        if encoding == "gzip":
            body = inflate(body)
        try:
            spans: list[InSpan] = decode_protobuf(body) if content_type == PROTOBUF else decode_json(body)
        except SpansError as e:
            raise Refusal(400, "bad_request", e.one_line()) from None
        if self.sink is None:
            raise Refusal(503, "busy", "the store is not open yet")
        async with self.lock:
            before = self.sink.stats.calls
            await self.sink.add(spans)
            if self.sink.stats.calls > before:
                self.say(self.sink.stats.line())
        # an empty ExportTraceServiceResponse: full success
        return 200, None, (b"", PROTOBUF) if content_type == PROTOBUF else (b"{}", JSON)
