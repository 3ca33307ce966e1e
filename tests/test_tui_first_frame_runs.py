"""The first frame of `zymi-tui observe` counts every run with its status when the child process reading them
sends the whole list while the app starts (after the newest runs were taken, before the screen mounts): the
figures are SQLite's own, read here from the store, not the dashboard's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyte
import pytest

from benchmarks.make_long_run import write_clones
from tests.test_tui_painted import Terminal
from tests.waiting import LIMIT

# the whole list is held in the child until the parent has taken the newest runs; the parent then waits until
# the child has put the whole list in the pipe, and starts the app: it comes during the app's start
LATE_REST = """
import asyncio
import os
import sys
import time
from zymi_tui.cli import main
from zymi_tui.commands import tui_cmds
from zymi_tui.tui import app

db, release, sent = sys.argv[1:4]
real_list_runs, real_send, real_init = tui_cmds.list_runs, tui_cmds._send, app.DashboardApp.__init__

async def held_list_runs(*args, **kwargs):  # the child: the whole list is read once the parent allows it
    while not os.path.exists(release):
        await asyncio.sleep(0.01)
    return await real_list_runs(*args, **kwargs)

def send(fd, value):  # the child: a mark once the whole list is in the pipe
    real_send(fd, value)
    if type(value[1]).__name__ == "RestOfRuns":
        open(sent, "w").close()

def init(self, *args, **kwargs):  # the parent, the newest runs taken: the rest is sent as the app starts
    open(release, "w").close()
    end = time.monotonic() + 60
    while not os.path.exists(sent) and time.monotonic() < end:
        time.sleep(0.01)
    real_init(self, *args, **kwargs)

tui_cmds.list_runs, tui_cmds._send, app.DashboardApp.__init__ = held_list_runs, send, init
sys.argv = ["zymi-tui", "observe", db]
sys.exit(main())
"""

FRAME_END = b"\x1b[?2026l"  # Textual writes each frame between the synchronized-output marks


def sql_runs(db: Path) -> list[tuple[str, str]]:
    """(glyph, pipeline) of every request, newest first, by SQLite alone: its turn's completion (same stream and
    correlation id) gives ✓ (success) or ✗; none gives ↯ (no process writes this store: interrupted)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        """SELECT json_extract(r.data, '$.kind.data.pipeline'),
                  (SELECT json_extract(c.data, '$.kind.data.success') FROM events c
                    WHERE c.kind_tag = 'pipeline_completed' AND c.stream_id = r.stream_id
                      AND c.correlation_id IS r.correlation_id ORDER BY c.id LIMIT 1)
             FROM events r WHERE r.kind_tag = 'pipeline_requested' ORDER BY r.timestamp DESC, r.id DESC"""
    ).fetchall()
    con.close()
    return [("↯" if ok is None else "✓" if ok else "✗", pipeline) for pipeline, ok in rows]


def make_store(tmp_path: Path) -> Path:
    """150 runs (the first page holds the newest 60); of the newest, one failed and one never ended."""
    db = tmp_path / "many.db"
    write_clones(db, 150 * 60, "memory", many=True)
    con = sqlite3.connect(db)
    done = [gid for (gid,) in con.execute("SELECT id FROM events WHERE kind_tag = 'pipeline_completed' ORDER BY id")]
    con.execute("UPDATE events SET data = json_set(data, '$.kind.data.success', json('false')) WHERE id = ?",
                (done[-2],))  # fmt: skip
    con.execute("DELETE FROM events WHERE id = ?", (done[-4],))
    con.commit()
    con.close()
    return db


def first_frame_showing(raw: bytes, size: tuple[int, int], text: str) -> list[str]:
    """The screen as the first frame that paints `text` left it (frames replayed from the output's start)."""
    screen = pyte.Screen(*size)
    stream = pyte.ByteStream(screen)
    for frame in raw.split(FRAME_END):
        stream.feed(frame + FRAME_END)
        if text in "\n".join(screen.display):
            return list(screen.display)
    raise AssertionError(f"{text!r} was never painted")


def listed(screen: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """The runs list's title and its rows as (glyph, pipeline), top to bottom."""
    top = next(y for y, line in enumerate(screen) if "─ Runs (" in line)
    title = screen[top].split("─ ", 1)[1].split(" ─", 1)[0]
    rows = []
    for line in screen[top + 1 :]:
        cell = line[1:]
        if cell[:1] not in (" ", "»") or cell[1:2] not in ("✓", "✗", "↯", "◷"):
            break
        words = cell[3:].split()
        rows.append((cell[1], words[1] if words[0] == "⚠" else words[0]))  # ⚠: its chain is broken (this test's edits)
    return title, rows


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_the_first_frame_counts_every_run_sent_while_the_app_starts(tmp_path: Path, size: tuple[int, int]) -> None:
    db = make_store(tmp_path)
    expected = sql_runs(db)
    assert {g for g, _ in expected[:10]} == {"✓", "✗", "↯"}  # the store holds all three among the newest
    script = ["-c", LATE_REST, str(db), str(tmp_path / "release"), str(tmp_path / "sent")]
    term = Terminal(script, tmp_path, size=size)
    try:
        assert term.wait_for(f"Runs ({len(expected)})", timeout=LIMIT), "\n".join(term.screen.display)
    finally:
        code = term.close()
    assert code == 0
    raw = bytes(term.raw)
    assert b"newest 60" not in raw  # the partial list was never painted
    title, rows = listed(first_frame_showing(raw, size, "─ Runs ("))
    assert title == f"Runs ({len(expected)})"
    assert len(rows) >= 5, rows
    assert rows == expected[: len(rows)]
