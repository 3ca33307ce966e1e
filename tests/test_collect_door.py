"""`collect`'s door, attacked: what it refuses before reading a body, and what it accepts.

Requests are written byte for byte on a socket (so Host, Origin and lengths are whatever a hostile
client makes them); the accepted ones are encoded by the OpenTelemetry SDK's own OTLP encoder.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import zymi_tui_bin
from zymi_tui.events.factory import open_reader, open_writer
from zymi_tui.events.location import SqliteStore
from zymi_tui.telemetry.collect_server import MAX_INFLATED, MAX_OTLP_BODY, Collector
from zymi_tui.telemetry.spans_store import SpanSink


def otlp_body() -> bytes:
    """One chat span with content, as the SDK's OTLP/HTTP exporter encodes it."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    messages = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}], "finish_reason": "stop"}]
    with provider.get_tracer("t").start_as_current_span(
        "chat m",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps(answer),
        },
    ):
        pass
    data: bytes = encode_spans(exporter.get_finished_spans()).SerializeToString()
    return data


@pytest.fixture
async def door(tmp_path: Path) -> AsyncIterator[Collector]:
    writer = await open_writer(SqliteStore(tmp_path / "events.db"))
    collector = Collector(SpanSink(writer), "127.0.0.1", 0, None)
    await collector.start()
    try:
        yield collector
    finally:
        await collector.stop()
        await writer.close()


async def send(c: Collector, head: str, body: bytes = b"", *, length: int | None = None) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", c.port)
    n = len(body) if length is None else length
    writer.write(head.replace("\n", "\r\n").encode() + f"content-length: {n}\r\n\r\n".encode() + body)
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    status = int(raw.split(b" ", 2)[1])
    return status, raw.split(b"\r\n\r\n", 1)[1]


def post(c: Collector, *extra: str, host: str | None = None, ctype: str = "application/x-protobuf") -> str:
    lines = ["POST /v1/traces HTTP/1.1", f"host: {host or f'127.0.0.1:{c.port}'}", f"content-type: {ctype}", *extra]
    return "\n".join(lines) + "\n"


async def calls_in(path: Path) -> int:
    reader = await open_reader(SqliteStore(path))
    try:
        return len(await reader.read_kinds(["llm_call_started"]))
    finally:
        await reader.close()


async def test_a_protobuf_batch_plain_or_gzip_is_written_and_answered_in_kind(door: Collector, tmp_path: Path) -> None:
    body = otlp_body()
    assert await send(door, post(door), body) == (200, b"")
    assert await send(door, post(door, "content-encoding: gzip"), gzip.compress(body)) == (200, b"")
    assert await calls_in(tmp_path / "events.db") == 1  # the same span twice: an exporter's retry, dropped
    assert door.sink.stats.duplicates == 1


async def test_otlp_json_is_read_with_hex_ids(door: Collector, tmp_path: Path) -> None:
    attrs = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
             {"key": "gen_ai.input.messages", "value": {"stringValue": '[{"role":"user","parts":[{"type":"text",'
                                                        '"content":"hi"}]}]'}}]  # fmt: skip
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "chat",
            "startTimeUnixNano": "1", "endTimeUnixNano": "2", "attributes": attrs}  # fmt: skip
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    assert await send(door, post(door, ctype="application/json"), body) == (200, b"{}")
    assert await calls_in(tmp_path / "events.db") == 1


@pytest.mark.parametrize(
    ("head", "status"),
    [
        ("GET /v1/traces HTTP/1.1\nhost: 127.0.0.1:{port}\n", 405),
        ("POST /v1/metrics HTTP/1.1\nhost: 127.0.0.1:{port}\n", 404),
        ("POST /v1/traces HTTP/1.1\nhost: attacker.example:{port}\ncontent-type: application/json\n", 403),
        (
            "POST /v1/traces HTTP/1.1\nhost: 127.0.0.1:{port}\norigin: http://attacker.example\n"
            "content-type: application/json\n",
            403,
        ),
        ("POST /v1/traces HTTP/1.1\nhost: 127.0.0.1:{port}\ncontent-type: text/plain\n", 415),
        (
            "POST /v1/traces HTTP/1.1\nhost: 127.0.0.1:{port}\ncontent-type: application/json\ncontent-encoding: br\n",
            415,
        ),
    ],
)
async def test_refused_on_the_head(door: Collector, head: str, status: int) -> None:
    assert (await send(door, head.format(port=door.port), b"{}"))[0] == status


async def test_a_body_over_the_limit_is_refused_unread(door: Collector) -> None:
    status, body = await send(door, post(door), b"", length=MAX_OTLP_BODY + 1)
    assert status == 413 and b"exceeds the limit" in body


async def test_a_gzip_bomb_is_not_inflated_whole(door: Collector) -> None:
    bomb = gzip.compress(b"\0" * (MAX_INFLATED + 1024))
    status, body = await send(door, post(door, "content-encoding: gzip"), bomb)
    assert status == 413 and b"inflates past" in body


async def test_garbage_protobuf_is_a_400_and_the_door_stays_up(door: Collector) -> None:
    assert (await send(door, post(door), b"\xff\xff\xff\xff"))[0] == 400
    assert (await send(door, post(door), otlp_body()))[0] == 200


async def test_a_token_is_checked_in_constant_time_before_the_body(tmp_path: Path) -> None:
    writer = await open_writer(SqliteStore(tmp_path / "events.db"))
    c = Collector(SpanSink(writer), "127.0.0.1", 0, "s3cret")
    await c.start()
    try:
        assert (await send(c, post(c), otlp_body()))[0] == 401
        assert (await send(c, post(c, "authorization: Bearer wrong"), otlp_body()))[0] == 401
        assert (await send(c, post(c, "authorization: Bearer s3cret"), otlp_body()))[0] == 200
    finally:
        await c.stop()
        await writer.close()


def test_binding_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [zymi_tui_bin(), "collect", "--host", "0.0.0.0", "--port", "0", "-d", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert "is not loopback: a token is required" in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / ".zymi").exists()  # refused before a store is made


def test_a_port_in_use_is_one_line_and_leaves_no_store(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([zymi_tui_bin(), "collect", "--port", str(port), "-d", str(tmp_path)],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr.startswith(f"zymi-tui: error: cannot listen on 127.0.0.1:{port}") and done.stderr.count("\n") == 1
    )
    assert not (tmp_path / ".zymi").exists()
