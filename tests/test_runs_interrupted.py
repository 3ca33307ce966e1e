"""Interrupted is not running: a run whose writer was killed (`kill -9`: no end row will ever come) is
listed "interrupted" by `runs` and the dashboard, and a run whose writer still lives, "running".

The writers are real processes: real zymi's `run` and ours, on a model (loopback) that holds its answer
until the test lets it go, so the run is going for as long as the test needs. What tells them apart is
what zymi leaves observable (zymi_tui/events/writers.py): a live process holding the store open,
running a writing command, started before the run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import requires_zymi, zymi_bin, zymi_tui_bin
from tests.test_engine_failures import _answer, _project
from tests.tui_support import make_app, settle
from tests.waiting import LIMIT, pilot_until, wait_until
from zymi_tui.events.writers import writing_command


@pytest.fixture
def held_llm() -> Iterator[tuple[int, threading.Event]]:
    """A model whose every answer waits until the event is set (then: "done")."""
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            release.wait(LIMIT)
            data = json.dumps(_answer("done")).encode()
            try:
                self.send_response(200)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the writer was killed meanwhile
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], release
    release.set()
    server.shutdown()


def _requests(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT count(*) FROM events WHERE kind_tag = 'pipeline_requested'").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not made yet
        return 0
    finally:
        con.close()


def _statuses(root: Path) -> dict[str, str]:
    done = subprocess.run(
        [zymi_tui_bin(), "runs", "-d", str(root), "--raw"], capture_output=True, text=True, timeout=LIMIT
    )
    assert done.returncode == 0, done.stderr
    return {obj["prompt"]: obj["status"] for obj in map(json.loads, done.stdout.splitlines())}


def _start(writer: str, root: Path, task: str) -> subprocess.Popen[bytes]:
    command = [zymi_bin() or "zymi", "--no-venv"] if writer == "zymi" else [zymi_tui_bin()]
    db = root / ".zymi" / "events.db"
    before = _requests(db)
    proc = subprocess.Popen(
        [*command, "run", "p", "-i", f"task={task}", "-d", str(root)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "OPENAI_API_KEY": "x"},
    )  # fmt: skip
    wait_until(lambda: _requests(db) > before or proc.poll() is not None, f"{writer}'s run to start")
    assert proc.poll() is None, f"{writer} ended before its run was going"
    return proc


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(LIMIT)


WRITERS = ["zymi-tui", pytest.param("zymi", marks=requires_zymi)]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_killed_run_is_interrupted_and_a_live_one_running(
    writer: str, held_llm: tuple[int, threading.Event], tmp_path: Path
) -> None:
    port, _ = held_llm
    root = _project(tmp_path / "p", port)
    first = _start(writer, root, "first")
    second = None
    try:
        assert _statuses(root) == {"task=first": "running"}
        second = _start(writer, root, "second")  # a later writer of the same pipeline
        _kill(first)
        # the live one is running; the killed one is interrupted, though a writer of its pipeline lives
        assert _statuses(root) == {"task=first": "interrupted", "task=second": "running"}
        _kill(second)
        assert _statuses(root) == {"task=first": "interrupted", "task=second": "interrupted"}
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                _kill(proc)


async def test_the_dashboard_shows_a_run_interrupted_once_its_writer_is_killed(
    held_llm: tuple[int, threading.Event], tmp_path: Path
) -> None:
    port, _ = held_llm
    root = _project(tmp_path / "p", port)
    proc = _start("zymi-tui", root, "watched")
    try:
        app = make_app(root / ".zymi" / "events.db")
        async with app.run_test(size=(120, 30)) as pilot:
            main = await settle(app, pilot)
            assert [s.status for s in main.runs.summaries] == ["running"]
            _kill(proc)
            await pilot_until(
                pilot, lambda: [s.status for s in main.runs.summaries] == ["interrupted"], "the run interrupted"
            )
            await pilot.press("q")
    finally:
        if proc.poll() is None:
            _kill(proc)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/v/bin/python3", "/v/bin/zymi", "--no-venv", "run", "p", "-i", "task=x"], ("run", frozenset({"p"}))),
        (["/v/bin/python3", "/v/bin/zymi-tui", "serve", "a", "b"], ("serve", frozenset({"a", "b"}))),
        (["python3", "-m", "zymi_tui", "serve", "--all"], ("serve", None)),
        (["/v/bin/python3", "-X", "importtime", "/v/bin/zymi-tui", "chat", "-d", "x"], ("chat", None)),
        (["/v/bin/python3", "/v/bin/zymi-tui", "runs"], None),
        (["/v/bin/python3", "/v/bin/zymi-tui", "observe"], None),
        (["bash", "-c", "zymi-tui run p"], None),
        (["/usr/bin/vim", "run"], None),
    ],
)
def test_writing_commands_are_told_from_their_command_line(
    argv: list[str], expected: tuple[str, frozenset[str] | None] | None
) -> None:
    assert writing_command(argv) == expected
