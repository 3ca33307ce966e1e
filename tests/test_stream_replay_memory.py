"""One stream's replay (`context --seq`, `rent`, `find`): a run's rows are held a page or two at a time,
whatever the run's length, and `context --seq N` decodes nothing after the call it shows.

The answer keys are SQLite's own (the rows' text lengths, where the call's LlmCallCompleted is), not the
replay's. Long runs: clones of the engine's recorded coding run (benchmarks/make_long_run.py).
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from benchmarks.make_long_run import write_clones
from zymi_tui.events.replay_view import decode_replay_row
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay import event_pages
from zymi_tui.replay.event_pages import replay_events
from zymi_tui.replay.store_replay import context_at


def _step_stream(db: Path) -> str:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        (stream,) = con.execute(
            "SELECT stream_id FROM events WHERE stream_id LIKE '%:step:%' GROUP BY stream_id ORDER BY count(*) DESC"
        ).fetchone()
    return str(stream)


async def _peak_of_reading(db: Path, stream: str) -> int:
    """tracemalloc's peak while every event of `stream`'s run is read as a replay reads it (not kept)."""
    async with await SqliteReader.open(db) as reader:
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            n = 0
            async for _ in replay_events(reader, [stream]):
                n += 1
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
    assert n > 0
    return peak


async def test_reading_a_long_runs_stream_holds_a_page_not_the_run(tmp_path: Path) -> None:
    """10x the run: the peak grows by far less than the text of the rows added (on main, the run's rows
    were read whole: it grew by more than all of it)."""
    peaks, text = [], []
    for events in (3_000, 30_000):
        db = tmp_path / f"long_{events}.db"
        write_clones(db, events, "coding_default")
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            text.append(con.execute("SELECT sum(length(CAST(data AS BLOB))) FROM events").fetchone()[0])
        peaks.append(await _peak_of_reading(db, _step_stream(db)))
    grown, added = peaks[1] - peaks[0], text[1] - text[0]
    assert grown < 0.3 * added, f"peak {peaks} for {text} bytes of row text: grew {grown / added:.2f}x the text added"


async def test_context_at_a_call_decodes_nothing_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`context --seq N` on an early call of a long run: no event after the call's LlmCallCompleted (the
    one its figures need) is decoded; on main the whole first page (2,000 rows) was."""
    db = tmp_path / "long.db"
    write_clones(db, 6_000, "coding_default")
    stream = _step_stream(db)
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        calls = con.execute(
            "SELECT sequence FROM events WHERE stream_id = ? AND kind_tag = 'llm_call_started' ORDER BY sequence",
            (stream,),
        ).fetchall()
        seq = calls[2][0]  # the third call
        (completed,) = con.execute(
            "SELECT min(id) FROM events WHERE stream_id = ? AND kind_tag = 'llm_call_completed' AND sequence > ?",
            (stream, seq),
        ).fetchone()
    decoded: list[int] = []

    def counted(type_name: str, gid: int, sequence: int, data: str) -> Any:
        decoded.append(gid)
        return decode_replay_row(type_name, gid, sequence, data)

    monkeypatch.setattr(event_pages, "decode_replay_row", counted)
    async with await SqliteReader.open(db) as reader:
        row = await context_at(reader, stream, seq, project=None)
    assert (row.stream_id, row.sequence) == (stream, seq)
    assert decoded and max(decoded) <= completed, f"decoded up to {max(decoded)}; the call completes at {completed}"
