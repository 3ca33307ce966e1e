"""The providers' HTTP client, from the outside: `zymi-tui run` (a subprocess) against a model server on
loopback that frames its answers in each way HTTP/1.1 allows (length, chunked, until close, gzip, after a
`100 Continue`), closes kept-alive connections, speaks TLS, or is a proxy."""

from __future__ import annotations

import gzip
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent / "zymi-tui"
TLS = Path(__file__).parent / "tls"  # a self-signed certificate for 127.0.0.1 (valid until 2126) and its key
TASK = "ёлка 🎄 go"


@dataclass
class Seen:
    target: str
    headers: dict[str, str]
    body: bytes
    connection: int


@dataclass
class Model:
    """A raw HTTP/1.1 server: `answer(request_no, body) -> (head lines, body bytes, close after)`."""

    answer: Callable[[int, bytes], tuple[list[str], bytes, bool]]
    tls: ssl.SSLContext | None = None
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0

    def serve(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._connection, args=(conn, self.connections), daemon=True).start()

    def _connection(self, conn: socket.socket, number: int) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            f = conn.makefile("rb")
            while True:
                line = f.readline()
                if not line:
                    return
                target = line.decode("latin-1").split(" ")[1]
                headers: dict[str, str] = {}
                while (h := f.readline()) not in (b"\r\n", b""):
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = f.read(int(headers["content-length"]))
                self.seen.append(Seen(target, headers, body, number))
                head, payload, close = self.answer(len(self.seen), body)
                conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
                if close:
                    return
        except (OSError, ssl.SSLError):
            return
        finally:
            conn.close()


@pytest.fixture
def model() -> Iterator[Callable[..., tuple[Model, int]]]:
    listeners: list[socket.socket] = []

    def start(answer: Callable[[int, bytes], tuple[list[str], bytes, bool]], tls: bool = False) -> tuple[Model, int]:
        context = None
        if tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(TLS / "loopback_cert.pem", TLS / "loopback_key.pem")
        server = Model(answer, context)
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)
        threading.Thread(target=server.serve, args=(listener,), daemon=True).start()
        return server, listener.getsockname()[1]

    yield start
    for listener in listeners:
        listener.close()


def openai_answer(n: int) -> bytes:
    """First a shell call, then the final answer: two requests in one run."""
    msg: dict[str, Any] = {"role": "assistant", "content": "final words ✓"}
    finish = "stop"
    if n == 1:
        call = {"id": "c1", "type": "function", "function": {"name": "execute_shell_command", "arguments": ""}}
        call["function"]["arguments"] = json.dumps({"command": "echo hi"})
        msg = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    answer = {"model": "m", "choices": [{"message": msg, "finish_reason": finish}], "usage": {"prompt_tokens": 3}}
    return json.dumps(answer, ensure_ascii=False).encode()


def project(root: Path, base_url: str, provider: str = "openai") -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "pipelines").mkdir()
    key = "  api_key: k-123\n" if provider == "anthropic" else ""
    (root / "project.yml").write_text(
        f"name: t\nllm:\n  provider: {provider}\n  model: mock\n  base_url: {base_url}\n{key}"
        'policy:\n  enabled: true\n  allow: ["echo *"]\n',
        encoding="utf-8",
    )
    (root / "agents" / "bot.yml").write_text("name: bot\ntools: [execute_shell_command]\n", encoding="utf-8")
    (root / "pipelines" / "p.yml").write_text(
        "name: p\ninputs: [{name: task}]\nsteps:\n  - id: l\n    agent: bot\n    task: '${inputs.task}'\n",
        encoding="utf-8",
    )
    return root


def run(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and not k.startswith("SSL_CERT")}
    return subprocess.run(
        [str(BIN), "run", "p", "-i", f"task={TASK}", "-d", str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**clean, "ZYMI_HOME": str(root / "home"), **env},
        timeout=float(os.environ.get("ZYMI_TUI_TEST_WAIT_S", "300")),
    )


def framed(kind: str) -> Callable[[int, bytes], tuple[list[str], bytes, bool]]:
    def answer(n: int, _: bytes) -> tuple[list[str], bytes, bool]:
        body = openai_answer(n)
        ok = "HTTP/1.1 200 OK"
        if kind == "length":
            return [ok, "Content-Type: application/json", f"Content-Length: {len(body)}"], body, False
        if kind == "chunked":
            chunks = [body[:7], body[7:40], body[40:]]
            payload = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\nX-Trailer: t\r\n\r\n"
            return [ok, "Transfer-Encoding: chunked"], payload, False
        if kind == "until-close":
            return ["HTTP/1.1 200 OK", "Connection: close"], body, True
        if kind == "gzip":
            packed = gzip.compress(body)
            return [ok, "Content-Encoding: gzip", f"Content-Length: {len(packed)}"], packed, False
        if kind == "continue-first":
            return ["HTTP/1.1 100 Continue", "", ok, f"Content-Length: {len(body)}"], body, False
        if kind == "closed-while-idle":  # kept alive by the headers, then closed: the next request needs a new one
            return [ok, f"Content-Length: {len(body)}"], body, True
        raise AssertionError(kind)

    return answer


@pytest.mark.parametrize("kind", ["length", "chunked", "until-close", "gzip", "continue-first", "closed-while-idle"])
def test_every_framing_of_an_answer_is_read(kind: str, tmp_path: Path, model: Callable[..., tuple[Model, int]]) -> None:
    server, port = model(framed(kind))
    proc = run(project(tmp_path, f"http://127.0.0.1:{port}/v1"))
    assert proc.returncode == 0, proc.stderr
    assert "final words ✓" in proc.stdout
    assert [s.target for s in server.seen] == ["/v1/chat/completions"] * 2
    assert all(json.loads(s.body)["model"] == "mock" for s in server.seen)
    assert TASK in server.seen[0].body.decode("utf-8")  # UTF-8 on the wire, not \u escapes
    assert server.seen[0].headers["content-type"] == "application/json"
    assert server.seen[0].headers["host"] == f"127.0.0.1:{port}"
    reused = kind in ("length", "chunked", "gzip", "continue-first")
    assert [s.connection for s in server.seen] == ([1, 1] if reused else [1, 2])


def test_an_answer_cut_short_is_one_line(tmp_path: Path, model: Callable[..., tuple[Model, int]]) -> None:
    def answer(n: int, _: bytes) -> tuple[list[str], bytes, bool]:
        return ["HTTP/1.1 200 OK", "Content-Length: 500"], b'{"model": "m", "choi', True

    _, port = model(answer)
    proc = run(project(tmp_path, f"http://127.0.0.1:{port}/v1"))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"error: [l] LLM call failed: HTTP request failed: error sending request for url "
        f"(http://127.0.0.1:{port}/v1/chat/completions): connection closed before message completed\n"
    )


def test_anthropic_bodies_are_compact_utf8_json(tmp_path: Path, model: Callable[..., tuple[Model, int]]) -> None:
    def answer(n: int, _: bytes) -> tuple[list[str], bytes, bool]:
        body = json.dumps(
            {"content": [{"type": "text", "text": "final words ✓"}], "stop_reason": "end_turn", "usage": {}}
        ).encode()
        return ["HTTP/1.1 200 OK", f"Content-Length: {len(body)}"], body, False

    server, port = model(answer)
    proc = run(project(tmp_path, f"http://127.0.0.1:{port}/v1", provider="anthropic"))
    assert proc.returncode == 0, proc.stderr
    (seen,) = server.seen
    assert seen.target == "/v1/messages"
    assert seen.headers["x-api-key"] == "k-123" and seen.headers["anthropic-version"] == "2023-06-01"
    doc = json.loads(seen.body)
    assert seen.body == json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    assert doc["messages"][0]["content"] == TASK


def test_tls_trusts_ssl_cert_file_and_nothing_unknown(tmp_path: Path, model: Callable[..., tuple[Model, int]]) -> None:
    server, port = model(framed("length"), tls=True)
    url = f"https://127.0.0.1:{port}/v1"
    trusted = run(project(tmp_path / "a", url), SSL_CERT_FILE=str(TLS / "loopback_cert.pem"))
    assert trusted.returncode == 0, trusted.stderr
    assert "final words ✓" in trusted.stdout
    assert len(server.seen) == 2
    unknown = run(project(tmp_path / "b", url))  # certifi's bundle does not know the loopback certificate
    assert unknown.returncode == 1
    assert unknown.stderr.startswith(
        f"error: [l] LLM call failed: HTTP request failed: error sending request for url ({url}/chat/completions): "
        "client error (Connect): "
    )
    assert "CERTIFICATE_VERIFY_FAILED" in unknown.stderr and unknown.stderr.count("\n") == 1
    assert len(server.seen) == 2  # nothing was sent to a server the client does not trust


def test_a_proxy_variable_sends_the_requests_through_the_proxy(
    tmp_path: Path, model: Callable[..., tuple[Model, int]]
) -> None:
    proxy, port = model(framed("length"))
    origin = "http://model.invalid:9/v1"  # never resolved: only the proxy is reached
    proc = run(project(tmp_path, origin), HTTP_PROXY=f"http://127.0.0.1:{port}")
    assert proc.returncode == 0, proc.stderr
    assert [s.target for s in proxy.seen] == [f"{origin}/chat/completions"] * 2


def modules_after_run(root: Path, **env: str) -> set[str]:
    """The modules a fresh interpreter holds after `zymi-tui run` of `root`'s pipeline (exit 0)."""
    code = (
        "import sys\n"
        "from zymi_tui.cli import main\n"
        f"code = main(['run', 'p', '-i', 'task=go', '-d', {str(root)!r}])\n"
        "print('\\n'.join(sys.modules), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**clean, "ZYMI_HOME": str(root / "home"), **env},
        timeout=float(os.environ.get("ZYMI_TUI_TEST_WAIT_S", "300")),
    )
    assert done.returncode == 0, done.stderr
    return set(done.stderr.split())


HTTPX = ("httpx", "httpcore", "anyio", "h11")


def test_a_run_loads_httpx_only_for_a_proxy(tmp_path: Path, model: Callable[..., tuple[Model, int]]) -> None:
    server, port = model(framed("length"))
    direct = modules_after_run(project(tmp_path / "a", f"http://127.0.0.1:{port}/v1"))
    assert not [m for m in direct if m.startswith(HTTPX)]
    assert len(server.seen) == 2
    proxy, proxy_port = model(framed("length"))
    proxied = modules_after_run(
        project(tmp_path / "b", "http://model.invalid:9/v1"), HTTP_PROXY=f"http://127.0.0.1:{proxy_port}"
    )
    assert "httpx" in proxied
    assert len(proxy.seen) == 2


def test_a_base_url_with_spaces_and_non_ascii_is_percent_encoded(
    tmp_path: Path, model: Callable[..., tuple[Model, int]]
) -> None:
    server, port = model(framed("length"))
    proc = run(project(tmp_path, f"http://127.0.0.1:{port}/v1/ünï code"))
    assert proc.returncode == 0, proc.stderr
    assert [s.target for s in server.seen] == ["/v1/%C3%BCn%C3%AF%20code/chat/completions"] * 2
