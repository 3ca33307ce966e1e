"""The HTTP client a model provider keeps: HTTP/1.1 on asyncio's streams, connections kept alive.

Plain http, or TLS trusting what httpx trusts (`SSL_CERT_FILE`, else `SSL_CERT_DIR`, else certifi's
bundle). With a proxy variable set, httpx (imported only then) makes the requests, honouring it and
`NO_PROXY` as it always did. Either way a failure is a `TransportFailure` whose text follows the
words of zymi's HTTP client (`client error (Connect): tcp connect error: Connection refused (os error 111)`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import quote, urlsplit

if TYPE_CHECKING:
    import asyncio
    import ssl

# asyncio, ssl, socket and zlib are imported by the functions that use them, at a provider's first
# request: a `run` makes its provider (and so says its configuration errors) before its first event,
# and loads asyncio only after that event (engine/run_request.py)

CONNECT_TIMEOUT_S = 15.0
READ_TIMEOUT_S = 300.0  # for each read, as httpx's read timeout: a slow stream that keeps sending is not cut
PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy"}  # what httpx reads (with NO_PROXY), any case
HEADER_LIMIT = 1 << 20
USER_AGENT = "zymi-tui"

T = TypeVar("T")


class TransportFailure(Exception):
    """No HTTP response was had; the text says why."""


class HttpResponse:
    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers  # names in lower case
        self.content = content

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        charset = "utf-8"
        for param in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = param.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip("\"'")
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


class ModelClient(Protocol):
    async def post(self, body: bytes, headers: dict[str, str]) -> HttpResponse: ...


def http_client(url: str) -> ModelClient:
    """The one client a provider keeps for its endpoint `url`."""
    if any(k.lower() in PROXY_VARIABLES for k in os.environ):
        return ProxiedClient(url)
    return StreamClient(url)


def tls_context() -> ssl.SSLContext:
    """httpx's default trust: `SSL_CERT_FILE`, else `SSL_CERT_DIR`, else certifi's CA bundle."""
    import ssl

    if os.environ.get("SSL_CERT_FILE"):
        ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    elif os.environ.get("SSL_CERT_DIR"):
        ctx = ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    else:
        import certifi

        ctx = ssl.create_default_context(cafile=certifi.where())
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def _os_error(e: OSError) -> str:
    """`Connection refused (os error 111)`; for every address of a name failing, the first one's."""
    errno = e.errno
    if errno is None and (first := re.search(r"\[Errno (\d+)\]", str(e))):
        errno = int(first.group(1))
    if errno is not None:
        return f"{os.strerror(errno)} (os error {errno})"
    return str(e) or type(e).__name__


async def _timed(step: Awaitable[T], seconds: float) -> T:
    import asyncio

    try:
        async with asyncio.timeout(seconds):  # a timer, not a task around each read
            return await step
    except TimeoutError:
        raise TransportFailure("operation timed out") from None


class _Stale(Exception):
    """A kept-alive connection the server had closed: nothing of the request was answered."""


class StreamClient:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.target = quote(target, safe="/:?#[]@!$&'()*+,;=%~")  # spaces and non-ASCII percent-encoded
        authority = parts.netloc.rpartition("@")[2]
        if not authority.isascii():
            authority = self.host.encode("idna").decode("ascii") + (f":{parts.port}" if parts.port else "")
        self.authority = authority
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._tls: ssl.SSLContext | None = None

    async def post(self, body: bytes, headers: dict[str, str]) -> HttpResponse:
        if any(c in text for item in headers.items() for text in item for c in "\r\n\0"):
            raise TransportFailure("builder error: invalid HTTP header (a line break or NUL in it)")
        head = [
            f"POST {self.target} HTTP/1.1",
            f"Host: {self.authority}",
            "Accept: */*",
            f"User-Agent: {USER_AGENT}",
            *(f"{k}: {v}" for k, v in headers.items()),
            f"Content-Length: {len(body)}",
            "",
            "",
        ]
        request = "\r\n".join(head).encode("latin-1") + body
        while self._idle:
            reader, writer = self._idle.pop()
            if reader.at_eof() or writer.is_closing():
                writer.close()
                continue
            try:
                return await self._exchange(reader, writer, request, reused=True)
            except _Stale:
                continue
        reader, writer = await self._connect()
        try:
            return await self._exchange(reader, writer, request, reused=False)
        except _Stale:
            raise TransportFailure("connection closed before message completed") from None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        import asyncio
        import socket
        import ssl

        context: ssl.SSLContext | None = None
        if self.tls:
            if self._tls is None:
                self._tls = tls_context()
            context = self._tls
        try:
            return await _timed(
                asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=context,
                    server_hostname=self.host if context else None,
                    limit=HEADER_LIMIT,
                ),
                CONNECT_TIMEOUT_S,
            )
        except TransportFailure as e:
            raise TransportFailure(f"client error (Connect): {e}") from None
        except socket.gaierror as e:
            raise TransportFailure(
                f"client error (Connect): dns error: failed to lookup address information: {e.strerror or e}"
            ) from None
        except ssl.SSLError as e:
            raise TransportFailure(f"client error (Connect): {e}") from None
        except OSError as e:
            raise TransportFailure(f"client error (Connect): tcp connect error: {_os_error(e)}") from None

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes, *, reused: bool
    ) -> HttpResponse:
        import asyncio
        import ssl
        import zlib

        keep = False
        try:
            try:
                writer.write(request)
                await _timed(writer.drain(), READ_TIMEOUT_S)
                head = await _timed(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError) as e:
                if reused and not getattr(e, "partial", b""):
                    raise _Stale from None
                raise
            while True:
                status, headers, version = _parse_head(head)
                if not 100 <= status < 200:
                    break
                head = await _timed(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            body, framed = await _read_body(reader, status, headers)
            keep = framed and version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
            return HttpResponse(status, headers, _decoded(body, headers.get("content-encoding", "")))
        except asyncio.IncompleteReadError:
            raise TransportFailure("connection closed before message completed") from None
        except asyncio.LimitOverrunError:
            raise TransportFailure("message head is too large") from None
        except (ValueError, zlib.error) as e:
            raise TransportFailure(f"invalid HTTP response: {e}") from None
        except ssl.SSLError as e:
            raise TransportFailure(str(e)) from None
        except OSError as e:
            raise TransportFailure(f"connection error: {_os_error(e)}") from None
        finally:
            if keep:
                self._idle.append((reader, writer))
            else:
                writer.close()


def _parse_head(head: bytes) -> tuple[int, dict[str, str], str]:
    status_line, *lines = head[:-4].decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    if not version.startswith("HTTP/"):
        raise ValueError(f"bad status line {status_line[:80]!r}")
    status = int(rest[:3])
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"bad header line {line[:80]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return status, headers, version


async def _read_body(reader: asyncio.StreamReader, status: int, headers: dict[str, str]) -> tuple[bytes, bool]:
    """The body, and whether its end was framed (the connection can carry another request)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: list[bytes] = []
        while True:
            size_line = await _timed(reader.readuntil(b"\r\n"), READ_TIMEOUT_S)
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while await _timed(reader.readuntil(b"\r\n"), READ_TIMEOUT_S) != b"\r\n":
                    pass  # trailers
                return b"".join(chunks), True
            chunks.append(await _timed(reader.readexactly(size + 2), READ_TIMEOUT_S))
            chunks[-1] = chunks[-1][:-2]
    if "content-length" in headers:
        return await _timed(reader.readexactly(int(headers["content-length"])), READ_TIMEOUT_S), True
    if status in (204, 304):
        return b"", True
    parts: list[bytes] = []
    while chunk := await _timed(reader.read(1 << 16), READ_TIMEOUT_S):
        parts.append(chunk)
    return b"".join(parts), False


def _decoded(body: bytes, encoding: str) -> bytes:
    import zlib

    for coding in reversed([c.strip().lower() for c in encoding.split(",") if c.strip()]):
        if coding in ("gzip", "x-gzip"):
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            try:
                body = zlib.decompress(body)
            except zlib.error:
                body = zlib.decompress(body, -zlib.MAX_WBITS)
        elif coding != "identity":
            raise ValueError(f"unsupported content-encoding {coding!r}")
    return body


class ProxiedClient:
    """httpx, for an environment that names a proxy (httpx reads it, and NO_PROXY)."""

    def __init__(self, url: str) -> None:
        import httpx

        self.url = url
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S))

    async def post(self, body: bytes, headers: dict[str, str]) -> HttpResponse:
        import httpx

        try:
            resp = await self._client.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as e:
            cause = str(e) or type(e).__name__
            inner = e.__cause__ or e.__context__
            if inner is not None and str(inner) and str(inner) not in cause:
                cause += f": {inner}"
            raise TransportFailure(cause) from None
        return HttpResponse(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, resp.content)
