"""`serve`'s http_inbound door under hostile clients: body limit, auth before the body, timeouts,
stream ids with control characters. Clients are raw sockets on 127.0.0.1, so nothing is sent that
the test does not choose."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import zymi_tui_bin
from tests.waiting import LIMIT, announced_port, bounded
from zymi_tui.engine.connectors import HttpInboundConnector
from zymi_tui.engine.recorder import Recorder
from zymi_tui.events.sqlite_write import SqliteWriter

MB = 1024 * 1024


def _head(length: int | None, *, extra: str = "") -> bytes:
    size = "transfer-encoding: chunked\r\n" if length is None else f"content-length: {length}\r\n"
    return f"POST /msg HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n{size}{extra}\r\n".encode()


def _status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else 0


def _answer_after(sock: socket.socket, timeout: float) -> bytes:
    """What the server sends until it closes (or `timeout` passes)."""
    sock.settimeout(timeout)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return got


# -- the body limit, measured on a real `zymi-tui serve` -----------------------------------------
@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, Path]]:
    root = tmp_path / "p"
    (root / "agents").mkdir(parents=True)
    (root / "pipelines").mkdir()
    (root / "project.yml").write_text(
        "name: t\nllm: {provider: demo, model: demo}\nconnectors:\n  - type: http_inbound\n    name: inbox\n"
        "    port: 0\n    path: /msg\n    pipeline: chat\n"
        '    extract: {stream_id: "$.s", content: "$.t"}\n',
        encoding="utf-8",
    )
    (root / "agents" / "a.yml").write_text("name: a\n", encoding="utf-8")
    (root / "pipelines" / "chat.yml").write_text(
        "name: chat\ninputs: [{name: message}]\nsteps:\n  - {id: r, agent: a, task: '${inputs.message}'}\n",
        encoding="utf-8",
    )
    # stderr to a file: a pipe nobody reads fills up, and serve blocks on its next line
    with (tmp_path / "serve.err").open("w") as errors:
        proc = subprocess.Popen(
            [zymi_tui_bin(), "serve", "chat"], cwd=root, stdout=subprocess.PIPE, stderr=errors, text=True
        )
    with bounded(proc):  # killed at the end, however the test or this set-up ends
        assert proc.stdout is not None
        port, _ = announced_port(proc.stdout, "http_inbound 'inbox': listening on")
        yield proc, port, root / ".zymi" / "events.db"


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _rows(db: Path) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    finally:
        con.close()


def _post_body(port: int, head: bytes, body_size: int) -> bytes:
    """Send a head, then up to `body_size` bytes of body in 64 KiB pieces while the server lets us;
    return its answer."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head)
        sock.settimeout(5)
        piece = b"x" * 65536
        sent = 0
        try:
            while sent < body_size:
                sent += sock.send(piece[: body_size - sent])
        except (OSError, TimeoutError):
            pass  # the server answered and closed while we were sending
        return _answer_after(sock, LIMIT)


def test_a_body_over_2_mb_is_refused_from_its_length_unread(serve: tuple[subprocess.Popen[str], int, Path]) -> None:
    proc, port, db = serve
    rows = _rows(db)
    before = _rss_kb(proc.pid)
    # the answer comes from the head alone: no byte of the 3 MB body has been sent
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_head(3 * MB, extra="expect: 100-continue\r\n"))
        answer = _answer_after(sock, LIMIT)
    assert _status(answer) == 413, answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"] == "payload_too_large"
    # a client that sends its 3 MB (or 100 MB) anyway gets the same answer; the server keeps none of it
    assert _status(_post_body(port, _head(3 * MB), 3 * MB)) == 413
    assert _status(_post_body(port, _head(100 * MB), 100 * MB)) == 413
    # a chunked body is counted as it arrives
    chunk = b"%x\r\n%s\r\n" % (MB, b"y" * MB)
    assert _status(_post_body(port, _head(None) + chunk * 3, 0)) == 413
    grown = (_rss_kb(proc.pid) - before) / 1024
    assert grown < 10, f"server RSS grew {grown:.1f} MB"
    assert _rows(db) == rows  # nothing was published
    # a body within the limit is still read and published
    ok = json.dumps({"s": "c", "t": "x" * (MB // 2)}).encode()
    assert _status(_post_body(port, _head(len(ok)) + ok, 0)) == 200


# -- auth, timeouts and stream ids, in-process ---------------------------------------------------
BASE = {"type": "http_inbound", "name": "inbox", "path": "/msg",
        "extract": {"stream_id": "$.s", "content": "$.t"}}  # fmt: skip


async def _start(tmp_path: Path, **cfg: Any) -> tuple[HttpInboundConnector, Recorder, list[Any]]:
    recorder = Recorder(await SqliteWriter.open(tmp_path / "events.db"))
    seen: list[Any] = []
    recorder.listeners.append(seen.append)
    conn = HttpInboundConnector({**BASE, "port": 0, **cfg}, recorder)
    await conn.start()
    return conn, recorder, seen


async def _stop(conn: HttpInboundConnector, recorder: Recorder) -> None:
    await conn.stop()
    await recorder.writer.close()


async def _exchange(port: int, data: bytes, timeout: float = LIMIT) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    try:
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


async def test_a_wrong_bearer_token_is_refused_after_the_headers_before_the_body(tmp_path: Path) -> None:
    conn, recorder, seen = await _start(tmp_path, auth={"type": "bearer", "token": "t0k"})
    try:
        # the head promises 1 MB that never comes: the 401 cannot have waited for it
        refused = await _exchange(conn.port, _head(MB, extra="authorization: Bearer nope\r\n"))
        body = json.dumps({"s": "c", "t": "hi"}).encode()
        good = _head(len(body), extra="authorization: Bearer t0k\r\nexpect: 100-continue\r\n") + body
        accepted = await _exchange(conn.port, good)
    finally:
        await _stop(conn, recorder)
    assert _status(refused) == 401
    assert accepted.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"), accepted
    assert [e.event.tag for e in seen] == ["user_message_received"]


async def test_idle_and_slow_connections_are_closed_after_a_timeout(tmp_path: Path) -> None:
    conn, recorder, seen = await _start(tmp_path)
    conn.head_timeout, conn.request_timeout = 0.3, 0.6
    try:
        idle = [await asyncio.open_connection("127.0.0.1", conn.port) for _ in range(20)]
        slow_head = await asyncio.open_connection("127.0.0.1", conn.port)
        slow_head[1].write(b"POST /msg HTTP/1.1\r\nhost: x\r\n")  # and never the blank line
        slow_body = await asyncio.open_connection("127.0.0.1", conn.port)
        slow_body[1].write(_head(100) + b'{"s": ')  # 6 of the 100 bytes promised
        # each read ends only when the server answers and closes: a connection kept open hangs here
        answers = [await asyncio.wait_for(r.read(), LIMIT) for r, _ in [*idle, slow_head, slow_body]]
        for _, w in [*idle, slow_head, slow_body]:
            w.close()
        deadline = time.monotonic() + LIMIT
        while conn.open_connections and time.monotonic() < deadline:  # the server lets them go
            await asyncio.sleep(0.01)
        left = conn.open_connections
    finally:
        await _stop(conn, recorder)
    assert [_status(a) for a in answers] == [408] * 22  # answered, then closed (read() saw EOF)
    assert left == 0 and seen == []


@pytest.mark.parametrize("stream_id", ["a\x00b", "\x1b[2Jx", "x\x7f", "x\x9b31m", "line\nbreak"])
async def test_a_stream_id_with_control_characters_is_refused(tmp_path: Path, stream_id: str) -> None:
    conn, recorder, seen = await _start(tmp_path)
    try:
        body = json.dumps({"s": stream_id, "t": "hi"}).encode()
        refused = await _exchange(conn.port, _head(len(body)) + body)
        body = json.dumps({"s": "чат-1 ✓", "t": "hi"}).encode()
        accepted = await _exchange(conn.port, _head(len(body)) + body)
    finally:
        await _stop(conn, recorder)
    assert _status(refused) == 400
    assert json.loads(refused.split(b"\r\n\r\n", 1)[1])["error"] == "invalid_stream_id"
    assert _status(accepted) == 200
    assert {e.event.stream_id for e in seen} == {"чат-1 ✓"}


async def test_more_open_connections_than_the_cap_are_turned_away(tmp_path: Path) -> None:
    conn, recorder, _ = await _start(tmp_path)
    try:
        held = [await asyncio.open_connection("127.0.0.1", conn.port) for _ in range(64)]
        await asyncio.sleep(0)  # let the server accept them
        while conn.open_connections < 64:
            await asyncio.sleep(0.01)
        extra = await _exchange(conn.port, b"")
        for _, w in held:
            w.close()
    finally:
        await _stop(conn, recorder)
    assert _status(extra) == 503
