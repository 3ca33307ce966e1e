"""Store text never acts on the user's terminal: controls, bidi overrides and undecodable bytes are
shown as visible escapes; `--raw` into a pipe stays byte-exact."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import LIMIT
from zymi_tui.events.kinds import Event, PipelineRequested, ToolCallCompleted
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.text_safety import escape_controls

HOSTILE = "clear:\x1b[2J nul:\x00 bell:\x07 rtl:\u202eevil\u202c c1:\x9b del:\x7f"
STREAM = "run-\x1b]0;title\x07-\u202e"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, ünïcode, 漢字", "plain text, ünïcode, 漢字"),
        ("\x1b[2J", "\\x1b[2J"),
        ("a\x00b", "a\\x00b"),
        ("\u202eabc\u202c", "\\u202eabc\\u202c"),
        ("\u2066x\u2069", "\\u2066x\\u2069"),
        ("c1 \x9b and del \x7f", "c1 \\x9b and del \\x7f"),
        ("line\nbreak\ttab", "line\\x0abreak\\x09tab"),
        ("sep\u2028para\u2029", "sep\\u2028para\\u2029"),
        ("undecodable \udcff byte", "undecodable \\xff byte"),
        ("family 👨\u200d👩\u200d👧 stays", "family 👨\u200d👩\u200d👧 stays"),  # ZWJ emoji untouched
    ],
)
def test_escape_controls(text: str, shown: str) -> None:
    assert escape_controls(text) == shown


def test_escape_controls_can_keep_newlines() -> None:
    assert escape_controls("a\nb\x1bc", keep="\n") == "a\nb\\x1bc"


@pytest.fixture
def hostile_store(tmp_path: Path) -> Path:
    db = tmp_path / "events.db"

    async def write() -> None:
        async with await SqliteWriter.open(db) as w:
            await w.append(Event.new(STREAM, PipelineRequested(pipeline="p", inputs={"task": HOSTILE}), "t"))
            kind = ToolCallCompleted(
                call_id="c1", result=HOSTILE, result_preview=HOSTILE, is_error=False, duration_ms=1
            )
            await w.append(Event.new(STREAM + ":step:s", kind, "t"))

    asyncio.run(write())
    return db


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, COLUMNS="400", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "zymi_tui", *args], capture_output=True, timeout=LIMIT, env=env)


UNSAFE = [b"\x1b", b"\x00", b"\x07", "\u202e".encode(), "\x9b".encode(), b"\x7f"]


def _assert_safe(out: bytes) -> None:
    for raw in UNSAFE:
        assert raw not in out, f"{raw!r} reached the terminal: {out!r}"


@pytest.mark.parametrize(
    "args",
    [["events", "--all"], ["runs"], ["verify", "-v"], ["replay"]],
    ids=["events", "runs", "verify", "replay"],
)
def test_printed_store_text_is_escaped(hostile_store: Path, args: list[str]) -> None:
    done = _cli(args[0], str(hostile_store), *args[1:])
    assert done.returncode in (0, 2), done.stderr
    _assert_safe(done.stdout)
    _assert_safe(done.stderr)
    if args[0] == "events":
        assert b"\\x1b[2J" in done.stdout and b"\\u202eevil" in done.stdout
        assert b"run-\\x1b]0;title\\x07-\\u202e" in done.stdout


def test_unknown_stream_error_escapes_the_ids_it_repeats(hostile_store: Path) -> None:
    done = _cli("context", str(hostile_store), "--stream", "nope\x1b[2J", "--seq", "1")
    assert done.returncode == 2
    assert done.stderr.count(b"\n") == 1, done.stderr
    _assert_safe(done.stderr)
    assert b"nope\\x1b[2J" in done.stderr


def test_raw_into_a_pipe_is_byte_exact(hostile_store: Path) -> None:
    done = _cli("events", str(hostile_store), "--all", "--raw")
    assert done.returncode == 0
    con = sqlite3.connect(hostile_store)
    stored = [row[0] for row in con.execute("SELECT data FROM events ORDER BY id")]
    con.close()
    lines = done.stdout.decode().splitlines()
    assert len(lines) == len(stored) == 2
    for line, data in zip(lines, stored, strict=True):
        assert line == data.replace('"sequence":0', '"sequence":1', 1)  # each event is first on its stream
    assert "\u202e".encode() in done.stdout  # JSON keeps non-ASCII as is: exact, as stored


def test_raw_onto_a_terminal_is_escaped(hostile_store: Path) -> None:
    leader, follower = pty.openpty()
    env = dict(os.environ, COLUMNS="400", NO_COLOR="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "zymi_tui", "events", str(hostile_store), "--all", "--raw"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], LIMIT)
        assert ready, "no output on the terminal"
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=LIMIT) == 0
    out = b"".join(chunks)
    assert b"\\u202eevil" in out
    _assert_safe(out)
