"""The `chat`, `demo` and `serve-web` commands as a user runs them (not on a terminal: the line-based chat)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.test_chat_support import cli, demo_project, zymi_raw, zymi_verify
from tests.waiting import LIMIT, announced_port


def _one_line_error(run: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    for needle in needles:
        assert needle in lines[0]


def test_chat_off_a_terminal_is_the_line_based_chat(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    run = cli("chat", "-d", str(project), "--stream", "mine", stdin="hello there\n/quit\n")
    assert run.returncode == 0, run.stderr
    assert "bot> [demo model] Done with: hello there." in run.stdout
    raw = zymi_raw(project)
    assert {r["stream_id"] for r in raw} == {"mine", "mine:step:reply"}
    done = [r for r in raw if r["kind"]["type"] == "PipelineCompleted"]
    assert len(done) == 1 and done[0]["source"] == "zymi-serve"
    assert zymi_verify(project).returncode == 0


def test_demo_writes_a_project_and_chats_on_it(tmp_path: Path) -> None:
    target = tmp_path / "new" / "demo"
    run = cli("demo", str(target), stdin="audit all modules\n")
    assert run.returncode == 0, run.stderr
    assert f"demo project in {target}" in run.stdout and "bot> [demo model]" in run.stdout
    assert (target / "project.yml").is_file() and (target / "pipelines" / "chat.yml").is_file()
    again = cli("demo", str(target), stdin="hello\n")  # an existing project is reused, its chat resumed
    assert again.returncode == 0, again.stderr
    kinds = [r["kind"]["type"] for r in zymi_raw(target)]
    assert kinds.count("UserMessageReceived") == 2


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    _one_line_error(cli("demo", str(busy)), str(busy), "not an empty folder")
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]
    _one_line_error(cli("chat", "-d", str(tmp_path / "nope")), "no such folder")
    _one_line_error(cli("chat", "-d", str(busy)), "no project.yml", "zymi-tui demo")
    run = cli("chat", "--timeout", "0", "-d", str(busy))
    assert run.returncode == 2 and "accepted: seconds" in run.stderr
    run = cli("serve-web", "--port", "70000")
    assert run.returncode == 2 and "accepted: a TCP port" in run.stderr
    with socket.create_server(("127.0.0.1", 0)) as taken:  # listening: the port is busy while we hold it
        port = taken.getsockname()[1]
        _one_line_error(cli("serve-web", "--port", str(port)), f"cannot listen on 127.0.0.1:{port}")


def test_serve_web_answers_on_loopback_then_stops(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "zymi_tui", "serve-web", "-d", str(project), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.stdout is not None
    port, seen = announced_port(proc.stdout, "serving zymi-tui on")
    assert port != 0
    try:
        deadline = time.monotonic() + LIMIT
        page = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert page is not None, f"serve-web did not answer: {proc.poll()}"
        assert page.status_code == 200
        assert "<html" in page.text.lower() and "zymi-tui" in page.text
        assert f"ws://127.0.0.1:{port}/ws" in page.text  # the app's websocket, on loopback
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=LIMIT)
    out = seen + out
    assert proc.returncode == 0, err
    assert f"serving zymi-tui on http://127.0.0.1:{port} " in out
    assert "chat -d" in out and str(project) in out
