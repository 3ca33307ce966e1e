"""`zymi-tui runs` as a person reads it: on an 80- and a 150-column terminal (a real pty) and piped.
Stream ids are whole and on one line, times are never cut; the expected ids come from SQL over the store."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import sqlite3
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import copy_store, oracle_db, zymi_tui_bin
from tests.waiting import LIMIT

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Several `zymi run` runs (UUID stream ids) and a 16-turn chat: the oracle stores' rows in one file."""
    db = copy_store(oracle_db("coding_default"), tmp_path_factory.mktemp("runs"))
    con = sqlite3.connect(db)
    for name in ("memory", "hard_cap", "coding_compaction", "chat_profile"):
        con.execute("ATTACH DATABASE ? AS other", (f"file:{oracle_db(name)}?mode=ro",))
        con.execute(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, correlation_id, "
            "causation_id, source, prev_hash, hash) SELECT event_id, stream_id, sequence, timestamp, kind_tag, data, "
            "correlation_id, causation_id, source, prev_hash, hash FROM other.events ORDER BY id"
        )
        con.commit()
        con.execute("DETACH DATABASE other")
    con.close()
    return db


def run_ids(db: Path) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        q = "SELECT DISTINCT stream_id FROM events WHERE kind_tag = 'pipeline_requested'"
        return sorted(r[0] for r in con.execute(q))
    finally:
        con.close()


def in_terminal(args: list[str], columns: int, rows: int = 50) -> list[str]:
    """The lines the command paints on a terminal `columns` wide (a pty, its size set as a terminal's is)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "LINES": str(rows), "TERM": "xterm-256color"}
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + LIMIT
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
        assert time.monotonic() < deadline, "no end of output"
    os.close(master)
    assert proc.wait(timeout=LIMIT) == 0
    text = ANSI.sub("", b"".join(chunks).decode("utf-8"))
    return [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]


def lines_holding(lines: list[str], text: str) -> list[str]:
    return [line for line in lines if text in line]


@pytest.mark.parametrize("columns", [80, 150])
def test_every_stream_id_is_whole_on_one_line_in_a_terminal(store: Path, columns: int) -> None:
    ids = run_ids(store)
    assert sum(1 for i in ids if re.search(r"-[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$", i)) >= 4
    lines = in_terminal([zymi_tui_bin(), "runs", str(store)], columns)
    assert all(len(line) <= columns for line in lines), max(lines, key=len)
    for stream in ids:
        assert len(lines_holding(lines, stream)) == 1, stream
    assert len([line for line in lines if TIME.search(line)]) == len(ids)  # one whole time per run


def test_at_150_columns_each_run_is_one_row(store: Path) -> None:
    ids = run_ids(store)
    lines = in_terminal([zymi_tui_bin(), "runs", str(store)], 150)
    for stream in ids:
        (row,) = lines_holding(lines, stream)
        assert TIME.search(row), row  # the id, its start time and the rest on the same line


@pytest.mark.parametrize("columns", [80, 150])
def test_nothing_is_cut(store: Path, columns: int) -> None:
    """Every prompt whole (the `prompt` field zymi's `runs --raw` prints, checked against zymi elsewhere)."""
    lines = in_terminal([zymi_tui_bin(), "runs", str(store)], columns)
    painted = "".join("".join(lines).split())
    raw = subprocess.run([zymi_tui_bin(), "runs", str(store), "--raw"], capture_output=True, text=True, timeout=LIMIT)
    prompts = [json.loads(line)["prompt"] for line in raw.stdout.splitlines()]
    assert len(prompts) == len(run_ids(store))
    for prompt in prompts:
        assert "".join(prompt.split()) in painted, prompt


def test_piped_the_format_is_stable_and_nothing_is_cut(store: Path) -> None:
    ids = run_ids(store)
    outputs = []
    for columns in ("40", "80", "300"):
        done = subprocess.run(
            [zymi_tui_bin(), "runs", str(store)],
            capture_output=True, text=True, timeout=LIMIT, env={**os.environ, "COLUMNS": columns},
        )  # fmt: skip
        assert (done.returncode, done.stderr) == (0, "")
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]  # whatever the width
    lines = outputs[0].splitlines()
    assert lines[0].split() == ["status", "stream", "turn", "pipeline", "started", "duration", "fork", "prompt"]
    assert sorted(line.split()[1] for line in lines[1:]) == ids
    assert all(TIME.search(line) for line in lines[1:])
    assert {line.split()[0] for line in lines[1:]} <= {"ok", "FAIL", "running"}
