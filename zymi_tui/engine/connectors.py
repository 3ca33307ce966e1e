"""Inbound connectors (docs/engine.md#connectors): stdin and http_inbound, plus the stdout output.

A connector publishes `UserMessageReceived` then (if it names a pipeline) `PipelineRequested` on one
stream with one fresh correlation id, source = the connector's name, exactly as zymi's do.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import sys
import unicodedata
import uuid
from collections.abc import Callable
from typing import Any

from zymi_tui.engine.recorder import Recorder
from zymi_tui.errors import UserError
from zymi_tui.events.kinds import PipelineRequested, UserMessageReceived, snake_tag
from zymi_tui.events.messages import UserMessage
from zymi_tui.events.stored import StoredEvent
from zymi_tui.http_request import (
    Head,
    OneRequestDoor,
    Reply,
    body_length,
    foreign_site,
    is_loopback,
    read_body,
    read_head,
)


class ConnectorError(UserError):
    """A connector that cannot start or serve; one line."""

    title = "Connector"


async def publish_message(
    recorder: Recorder,
    *,
    name: str,
    stream_id: str,
    text: str,
    pipeline: str | None,
    pipeline_input: str,
    correlation_id: str | None = None,
) -> str:
    corr = correlation_id or str(uuid.uuid4())
    await recorder.emit(stream_id, UserMessageReceived(content=UserMessage(content=text), connector=name), name, corr)
    if pipeline:
        await recorder.emit(stream_id, PipelineRequested(pipeline=pipeline, inputs={pipeline_input: text}), name, corr)
    return corr


_PATH_PART = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']*)'\]")


def json_path(path: str, body: Any) -> Any:
    """The first match of a simple JSONPath (`$.a.b`, `$.a[0]`, `$['k']`); None if nothing matches."""
    if not path.startswith("$"):
        raise ConnectorError(f"unsupported JSONPath `{path}` (it must start with `$`)")
    node, rest = body, path[1:]
    while rest:
        m = _PATH_PART.match(rest)
        if not m:
            raise ConnectorError(f"unsupported JSONPath `{path}`")
        key, index, quoted = m.groups()
        if index is not None:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        else:
            k = key if key is not None else quoted
            node = node.get(k) if isinstance(node, dict) else None
        if node is None:
            return None
        rest = rest[m.end() :]
    return node


def _as_string(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _door(cfg: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """An http_inbound connector's name, host and auth, defaults filled in."""
    return (
        str(cfg.get("name") or "http_inbound"),
        str(cfg.get("host") or "127.0.0.1"),
        cfg.get("auth") or {"type": "none"},
    )


def check_door(name: str, host: str, auth: dict[str, Any], *, insecure: bool) -> None:
    """Refuse a door without auth on an address others can reach, unless `--insecure`."""
    if auth.get("type", "none") == "none" and not is_loopback(host) and not insecure:
        raise ConnectorError(
            f"http_inbound '{name}': host {host} is not a loopback address and no `auth` is set, "
            "so anyone who can reach it could drive the agent; set `auth`, or pass --insecure"
        )


def check_doors(connectors: list[dict[str, Any]], *, insecure: bool) -> None:
    """Before anything starts: every http_inbound door of the project is safe to open."""
    for cfg in connectors:
        if cfg.get("type") == "http_inbound":
            check_door(*_door(cfg), insecure=insecure)


class StdinConnector:
    def __init__(self, cfg: dict[str, Any], recorder: Recorder) -> None:
        self.name = str(cfg.get("name") or "stdin")
        self.stream_id = str(cfg.get("stream_id") or self.name)
        self.pipeline = cfg.get("pipeline")
        self.pipeline_input = str(cfg.get("pipeline_input") or "message")
        self.recorder = recorder

    async def run(self) -> None:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                return
            text = line.rstrip("\n").rstrip("\r")
            if not text:
                continue
            await publish_message(
                self.recorder,
                name=self.name,
                stream_id=self.stream_id,
                text=text,
                pipeline=self.pipeline,
                pipeline_input=self.pipeline_input,
            )


UNAUTHORIZED = {"error": "unauthorized", "detail": "authentication failed"}
MAX_STREAM_ID = 256  # bytes (UTF-8)
LOG_CLIENT_CHARS = 200  # of a client's input, at most, in a line of the log


def clip(text: str, limit: int = LOG_CLIENT_CHARS) -> str:
    """A client's text for the log: at most `limit` characters, the cut said."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


class HttpInboundConnector(OneRequestDoor):
    def __init__(self, cfg: dict[str, Any], recorder: Recorder, *, insecure: bool = False) -> None:
        try:
            port = int(cfg["port"])
            extract = cfg["extract"]
            self.stream_path, self.content_path = str(extract["stream_id"]), str(extract["content"])
        except (KeyError, TypeError, ValueError) as e:
            raise ConnectorError(f"http_inbound connector: missing or invalid field {e}") from None
        self.corr_path = extract.get("correlation_id")
        self.name, host, self.auth = _door(cfg)
        super().__init__(host, port)
        self.path = str(cfg.get("path") or "/")
        self.pipeline = cfg.get("pipeline")
        self.pipeline_input = str(cfg.get("pipeline_input") or "message")
        self.recorder = recorder
        self.insecure = insecure  # `serve --insecure`: a non-loopback address without auth is allowed

    async def start(self) -> None:
        check_door(self.name, self.host, self.auth, insecure=self.insecure)
        try:
            await self.listen()
        except OSError as e:
            raise ConnectorError(f"http_inbound '{self.name}': cannot listen on {self.host}:{self.port}: {e}") from None

    def _same_site(self, head: Head) -> bool:
        """Without auth: the request is meant for this very server (http_request.foreign_site)."""
        return foreign_site(head, self.host, self.port) is None

    def _bearer_ok(self, head: Head) -> bool:
        return hmac.compare_digest(head.headers.get("authorization", ""), f"Bearer {self.auth.get('token', '')}")

    def _hmac_ok(self, head: Head, body: bytes) -> bool:
        mac = hmac.new(str(self.auth.get("secret", "")).encode(), body, hashlib.sha256).hexdigest()
        want = str(self.auth.get("prefix") or "") + mac
        return hmac.compare_digest(head.headers.get(str(self.auth.get("header", "")).lower(), ""), want)

    async def respond(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Reply:
        """Decide on the head alone what can be decided there (path, method, bearer token, size);
        only then read the body."""
        head = await asyncio.wait_for(read_head(reader), self.head_timeout)
        if head.path != self.path:
            return 404, None, None
        if head.method != "POST":
            return 405, None, None
        kind = self.auth.get("type", "none")
        if kind == "none" and not self._same_site(head):
            return (
                403,
                {"error": "forbidden", "detail": "cross-site request: foreign Origin or Host (set `auth`)"},
                None,
            )
        if kind == "bearer" and not self._bearer_ok(head):
            return 401, UNAUTHORIZED, None
        length = body_length(head)
        if head.headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = await read_body(reader, length)
        if kind == "hmac" and not self._hmac_ok(head, body):
            return 401, UNAUTHORIZED, None
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError) as e:
            return 400, {"error": "invalid_json", "detail": str(e)}, None
        try:
            stream = _as_string(json_path(self.stream_path, parsed))
            content = _as_string(json_path(self.content_path, parsed))
        except ConnectorError as e:
            return 400, {"error": "extract_failed", "detail": str(e)}, None
        if stream is None or content is None:
            field = "extract.stream_id" if stream is None else "extract.content"
            return 400, {"error": "extract_failed", "detail": f"{field}: no match"}, None
        if not stream or len(stream.encode("utf-8")) > MAX_STREAM_ID:
            return 400, {"error": "invalid_stream_id", "detail": f"stream id must be 1 to {MAX_STREAM_ID} bytes"}, None
        bad = next((c for c in stream if unicodedata.category(c) == "Cc"), None)
        if bad is not None:
            return (
                400,
                {"error": "invalid_stream_id", "detail": f"stream id contains control character U+{ord(bad):04X}"},
                None,
            )
        corr = _as_string(json_path(self.corr_path, parsed)) if isinstance(self.corr_path, str) else None
        try:
            corr = str(uuid.UUID(corr)) if corr else None
        except ValueError:
            corr = None
        await publish_message(
            self.recorder,
            name=self.name,
            stream_id=stream,
            text=content,
            pipeline=self.pipeline,
            pipeline_input=self.pipeline_input,
            correlation_id=corr,
        )
        return 200, None, None


_TEMPLATE = re.compile(r"\{\{\s*event\.(\w+)(\s*\|\s*tojson)?\s*\}\}")


class StdoutOutput:
    """`type: stdout`: renders `{{ event.<field> }}` (and `| tojson`) for the events named in `on:`."""

    def __init__(self, cfg: dict[str, Any], write: Callable[[str], None]) -> None:
        self.template = str(cfg.get("template") or "")
        on = cfg.get("on") or []
        self.tags = {t if "_" in t else snake_tag(t) for t in on}
        self.newline = cfg.get("newline", True) is not False
        self.write = write

    def __call__(self, stored: StoredEvent) -> None:
        ev = stored.event
        if self.tags and ev.tag not in self.tags:
            return
        fields: dict[str, Any] = {
            "kind": ev.tag,
            "stream_id": ev.stream_id,
            "correlation_id": ev.correlation_id,
            "source": ev.source,
            "timestamp": ev.timestamp,
        }
        data = ev.kind.to_data()
        if isinstance(data, dict):
            fields.update(data)
        content = fields.get("content")
        if isinstance(content, dict) and len(content) == 1:
            fields["content"] = next(iter(content.values()))

        def render(m: re.Match[str]) -> str:
            value = fields.get(m.group(1), "")
            return json.dumps(value, ensure_ascii=False) if m.group(2) else ("" if value is None else str(value))

        self.write(_TEMPLATE.sub(render, self.template) + ("\n" if self.newline else ""))
