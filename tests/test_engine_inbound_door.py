"""`serve`'s http_inbound door against a web page and a smuggler (issue 30): without `auth`, a foreign
Origin or Host is refused; a non-loopback address without auth needs `--insecure`; Transfer-Encoding
with Content-Length is refused at once; stream ids are 1 to 256 bytes; the log clips a client's text.
Clients are raw sockets, so every header is the one the test chooses."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import zymi_tui_bin
from tests.test_engine_inbound_limits import _exchange, _start, _status, _stop, serve  # noqa: F401  (a fixture)
from tests.waiting import LIMIT, announced_port


def _post(body: bytes, *, host: str = "127.0.0.1", extra: str = "") -> bytes:
    head = f"POST /msg HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
    return (head + f"content-length: {len(body)}\r\n{extra}\r\n").encode() + body


BODY = json.dumps({"s": "chat-1", "t": "hi"}).encode()


@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        ("127.0.0.1", "http://attacker.example", 403),
        ("attacker.example", None, 403),  # DNS rebinding: the page's own name, resolving to loopback
        ("attacker.example", "http://attacker.example", 403),
        ("127.0.0.1", "null", 403),  # a sandboxed frame or a file:// page
        ("127.0.0.1:{port}", "https://127.0.0.1:{port}", 403),
        ("127.0.0.1:1", None, 403),  # another port: not the bound address
        ("127.0.0.1", None, 200),  # a script or curl: no Origin
        ("127.0.0.1:{port}", None, 200),
        ("localhost:{port}", "http://localhost:{port}", 200),  # the page served from this very address
        ("127.0.0.1:{port}", "http://127.0.0.1:{port}", 200),
    ],
)
async def test_without_auth_a_foreign_origin_or_host_is_refused(
    tmp_path: Path, host: str, origin: str | None, status: int
) -> None:
    conn, recorder, seen = await _start(tmp_path, host="127.0.0.1")
    try:
        extra = "" if origin is None else f"origin: {origin.format(port=conn.port)}\r\n"
        answer = await _exchange(conn.port, _post(BODY, host=host.format(port=conn.port), extra=extra))
    finally:
        await _stop(conn, recorder)
    assert _status(answer) == status, answer
    assert len(seen) == (1 if status == 200 else 0)  # a refused post publishes nothing


async def test_with_auth_the_token_decides_not_the_origin(tmp_path: Path) -> None:
    conn, recorder, seen = await _start(tmp_path, auth={"type": "bearer", "token": "t0k"})
    try:
        extra = "origin: http://tool.example\r\nauthorization: Bearer t0k\r\n"
        answer = await _exchange(conn.port, _post(BODY, host="inbox.example", extra=extra))
    finally:
        await _stop(conn, recorder)
    assert _status(answer) == 200 and len(seen) == 1


async def test_transfer_encoding_with_content_length_is_refused_at_once(tmp_path: Path) -> None:
    conn, recorder, seen = await _start(tmp_path)
    try:
        head = "POST /msg HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n"
        head += f"content-length: {len(BODY)}\r\n\r\n"  # the body, framed by its length: no chunk in it
        started = time.monotonic()
        answer = await _exchange(conn.port, head.encode() + BODY, timeout=5)  # read() ends: the server closed
        took = time.monotonic() - started
    finally:
        await _stop(conn, recorder)
    assert _status(answer) == 400, answer
    assert b"connection: close" in answer.lower()
    assert took < 5 and seen == []


@pytest.mark.parametrize(
    ("stream_id", "status"),
    [("", 400), ("s" * 257, 400), ("s" * 100_000, 400), ("é" * 129, 400), ("s" * 256, 200), ("é" * 128, 200)],
    ids=["empty", "257 bytes", "100 KB", "258 bytes in 129 chars", "256 bytes", "256 bytes in 128 chars"],
)
async def test_a_stream_id_is_1_to_256_bytes(tmp_path: Path, stream_id: str, status: int) -> None:
    conn, recorder, seen = await _start(tmp_path)
    try:
        answer = await _exchange(conn.port, _post(json.dumps({"s": stream_id, "t": "hi"}).encode()))
    finally:
        await _stop(conn, recorder)
    assert _status(answer) == status, answer[:200]
    if status == 400:
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"] == "invalid_stream_id"
    assert len(seen) == (1 if status == 200 else 0)


def test_the_log_clips_a_clients_text_to_200_characters(serve: tuple[subprocess.Popen[str], int, Path]) -> None:  # noqa: F811
    proc, port, _ = serve
    import socket

    stream = "S" * 256
    content = "C" * 5000
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_post(json.dumps({"s": stream, "t": content}).encode()))
        sock.settimeout(LIMIT)
        assert _status(sock.recv(65536)) == 200
    assert proc.stdout is not None
    line = proc.stdout.readline()
    while "received PipelineRequested" not in line:
        line = proc.stdout.readline()
    runs = [len(m) for m in re.findall(r"S+|C+", line)]
    assert runs and max(runs) <= 200, line


def _project(root: Path, host: str, auth: str = "") -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "pipelines").mkdir()
    (root / "project.yml").write_text(
        "name: t\nllm: {provider: demo, model: demo}\nconnectors:\n  - type: http_inbound\n    name: inbox\n"
        f"    host: {host}\n    port: 0\n    path: /msg\n    pipeline: chat\n{auth}"
        '    extract: {stream_id: "$.s", content: "$.t"}\n',
        encoding="utf-8",
    )
    (root / "agents" / "a.yml").write_text("name: a\n", encoding="utf-8")
    (root / "pipelines" / "chat.yml").write_text(
        "name: chat\ninputs: [{name: message}]\nsteps:\n  - {id: r, agent: a, task: '${inputs.message}'}\n",
        encoding="utf-8",
    )
    return root


def test_serve_on_a_public_address_without_auth_needs_insecure(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "0.0.0.0")
    refused = subprocess.run(
        [zymi_tui_bin(), "serve", "chat", "-d", str(root)], capture_output=True, text=True, timeout=LIMIT
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "--insecure" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert refused.stdout == "" and not (root / ".zymi").exists()  # refused before anything started
    assert "Traceback" not in refused.stderr
    proc = subprocess.Popen(
        [zymi_tui_bin(), "serve", "chat", "--insecure", "-d", str(root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        port, _ = announced_port(proc.stdout, "http_inbound 'inbox': listening on")
        assert port > 0
        assert "warning: http_inbound 'inbox' on 0.0.0.0 without auth (--insecure)" in proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_on_a_public_address_with_auth_starts(tmp_path: Path) -> None:
    auth = "    auth: {type: bearer, token: t0k}\n"
    root = _project(tmp_path / "p", "0.0.0.0", auth)
    proc = subprocess.Popen(
        [zymi_tui_bin(), "serve", "chat", "-d", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port, _ = announced_port(proc.stdout, "http_inbound 'inbox': listening on")
        assert port > 0
    finally:
        proc.terminate()
        proc.wait(10)
