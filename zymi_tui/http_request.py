"""A bounded HTTP/1.1 request reader for the inbound doors, `serve`'s `http_inbound` and `collect`'s OTLP
receiver (one request per connection).

Nothing is read that is not needed to answer: the head is limited in size, the body's length is
checked from `Content-Length` before a byte of it is read (or counted while reading a chunked
body), and the caller decides on the head alone (path, method, bearer token) before asking for the
body. A client too slow or silent is cut off by the door's timeouts. `OneRequestDoor` is the server
side both doors share: at most MAX_CONNECTIONS open (more are answered 503), the whole request within
`request_timeout`, a refusal answered with its status, and `stop` dropping what is still open; what a
request means is each door's `respond`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
from dataclasses import dataclass

MAX_HEAD = 64 * 1024  # request line and headers
MAX_BODY = 2 * 1024 * 1024  # zymi answers 413 above 2 MB
HEAD_TIMEOUT_S = 10.0  # from connecting to the end of the headers
REQUEST_TIMEOUT_S = 30.0  # from connecting to the end of the body
MAX_CONNECTIONS = 64  # open at once; more are answered 503
LINGER_S = 0.5  # after a refusal, how long unread request bytes are drained (so the answer is seen)

REASONS = {
    100: "Continue", 200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed", 408: "Request Timeout", 413: "Payload Too Large",
    415: "Unsupported Media Type", 431: "Request Header Fields Too Large", 501: "Not Implemented",
    503: "Service Unavailable",
}  # fmt: skip


class Refusal(Exception):
    """The request is answered with `status` and a JSON `{"error", "detail"}` body."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.payload = {"error": error, "detail": detail}


@dataclass
class Head:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value


async def read_head(reader: asyncio.StreamReader) -> Head:
    """The request line and headers, at most MAX_HEAD bytes in all."""
    size = 0
    lines: list[str] = []
    while True:
        try:
            raw = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            raise Refusal(431, "header_too_large", f"request head exceeds {MAX_HEAD} bytes") from None
        except asyncio.IncompleteReadError:
            raise Refusal(400, "bad_request", "connection closed in the request head") from None
        size += len(raw)
        if size > MAX_HEAD:
            raise Refusal(431, "header_too_large", f"request head exceeds {MAX_HEAD} bytes")
        line = raw.decode("latin-1").rstrip("\r\n")
        if not line:
            if lines:
                break
            continue  # blank lines before the request line are allowed (RFC 9112 §2.2)
        lines.append(line)
    parts = lines[0].split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise Refusal(400, "bad_request", "malformed request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise Refusal(400, "bad_request", "malformed header line")
        headers[name.lower()] = value.strip()
    return Head(parts[0], parts[1].split("?", 1)[0], headers)


def body_length(head: Head, limit: int = MAX_BODY) -> int | None:
    """The declared body length (None: chunked); 413 above `limit`, before any of it is read."""
    coding = head.headers.get("transfer-encoding", "").lower()
    if coding and "content-length" in head.headers:  # the request-smuggling shape (RFC 9112 §6.3)
        raise Refusal(400, "bad_request", "both transfer-encoding and content-length: refused")
    if coding:
        if coding != "chunked":
            raise Refusal(501, "unsupported_transfer_encoding", f"transfer-encoding `{coding}` is not supported")
        return None
    text = head.headers.get("content-length", "0")
    if not text.isdigit():
        raise Refusal(400, "bad_request", "invalid content-length")
    length = int(text)
    if length > limit:
        raise Refusal(413, "payload_too_large", f"body of {length} bytes exceeds the limit of {limit} bytes")
    return length


async def read_body(reader: asyncio.StreamReader, length: int | None, limit: int = MAX_BODY) -> bytes:
    """The body: `length` bytes, or a chunked body counted as it arrives (413 past `limit`)."""
    try:
        if length is not None:
            return await reader.readexactly(length)
        body = bytearray()
        while True:
            size_line = (await reader.readuntil(b"\n")).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise Refusal(400, "bad_request", "malformed chunk size") from None
            if size == 0:
                while (await reader.readuntil(b"\n")).strip():
                    pass  # trailers, ignored
                return bytes(body)
            if len(body) + size > limit:
                raise Refusal(413, "payload_too_large", f"chunked body exceeds the limit of {limit} bytes")
            body += await reader.readexactly(size)
            await reader.readexactly(2)  # the chunk's CRLF
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise Refusal(400, "bad_request", "connection closed in the request body") from None


async def answer(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    status: int,
    payload: dict[str, str] | None,
    *,
    raw: tuple[bytes, str] | None = None,
) -> None:
    """Send the response and close (`raw`: a body and its content type instead of the JSON `payload`).
    Request bytes still arriving are drained (never kept), up to LINGER_S and MAX_BODY bytes, so a
    client still sending sees the answer rather than a reset."""
    text, content_type = raw or (b"" if payload is None else json.dumps(payload).encode(), "application/json")
    head = f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\ncontent-length: {len(text)}\r\n"
    head += f"content-type: {content_type}\r\nconnection: close\r\n\r\n"
    with contextlib.suppress(OSError, TimeoutError):
        writer.write(head.encode() + text)
        await asyncio.wait_for(writer.drain(), LINGER_S)
        if writer.can_write_eof():
            writer.write_eof()
        loop = asyncio.get_running_loop()
        until, drained = loop.time() + LINGER_S, 0
        while loop.time() < until and drained < MAX_BODY:
            chunk = await asyncio.wait_for(reader.read(65536), until - loop.time())
            if not chunk:
                break
            drained += len(chunk)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


WILDCARD = {"0.0.0.0", "::", ""}  # a bind address that is every interface


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address (`127.0.0.1`, `[::1]`)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_part(value: str) -> tuple[str, str]:
    """(host, port) of a Host header or an Origin's authority (`[::1]:8080`, `name:80`, `name`)."""
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        return host.lower(), rest.lstrip(":")
    host, _, port = value.rpartition(":") if value.count(":") == 1 else (value, "", "")
    return host.lower(), port


def foreign_site(head: Head, bound_host: str, bound_port: int) -> str | None:
    """Why a request is not meant for this server (None: it is): its Host must name the bound address (any
    loopback name when bound to loopback) and port, and an Origin (a browser's) must be that very site. A
    page on another site, or a DNS name rebound to this address, is refused."""
    raw = head.headers.get("host", "")
    host, port = host_part(raw)
    names = {bound_host.strip("[]").lower()}
    if is_loopback(bound_host):
        names |= {"localhost", "127.0.0.1", "::1"}
    if bound_host not in WILDCARD and (host not in names or port not in ("", str(bound_port))):
        return f"Host {raw[:200]!r} is not this server"
    origin = head.headers.get("origin")
    if origin is None:
        return None
    scheme, _, authority = origin.partition("://")
    if scheme == "http" and host_part(authority) in {(host, port), (host, port or str(bound_port))}:
        return None
    return f"Origin {origin[:200]!r} is not this server"


Reply = tuple[int, dict[str, str] | None, tuple[bytes, str] | None]  # status, JSON payload, raw body + type


class OneRequestDoor:
    """Listens on `host:port` (port 0: the OS picks one, read back after `listen`)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.server: asyncio.Server | None = None
        self.handlers: set[asyncio.Task[None]] = set()  # one per open connection
        self.head_timeout, self.request_timeout = HEAD_TIMEOUT_S, REQUEST_TIMEOUT_S

    async def listen(self) -> None:
        """Bind (OSError as the OS words it: each door turns it into its own error)."""
        self.server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening and drop the connections still open."""
        if self.server is not None:
            self.server.close()
        handlers = list(self.handlers)
        for task in handlers:
            task.cancel()
        if handlers:
            await asyncio.wait(handlers)
        if self.server is not None:
            await self.server.wait_closed()

    @property
    def open_connections(self) -> int:
        return len(self.handlers)

    async def respond(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Reply:
        """Read one request (its head within `head_timeout`) and say what to answer; a `Refusal` is answered too."""
        raise NotImplementedError

    def refused(self, status: int, payload: dict[str, str] | None) -> None:
        """Told of every answer of status 400 or more (a door may log it)."""

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        busy = len(self.handlers) >= MAX_CONNECTIONS
        if task is not None:
            self.handlers.add(task)
        try:
            if busy:
                await answer(reader, writer, 503, {"error": "busy", "detail": "too many open connections"})
                return
            raw: tuple[bytes, str] | None = None
            try:
                status, payload, raw = await asyncio.wait_for(self.respond(reader, writer), self.request_timeout)
            except Refusal as e:
                status, payload = e.status, e.payload
            except TimeoutError:
                status, payload = 408, {"error": "timeout", "detail": "the request did not arrive in time"}
            except ConnectionError:
                writer.close()
                return
            if status >= 400:
                self.refused(status, payload)
            await answer(reader, writer, status, payload, raw=raw)
        except asyncio.CancelledError:  # `stop`: the connection is dropped, quietly
            writer.close()
        finally:
            self.handlers.discard(task)
