"""The newest runs of a store holding one long run (the dashboard's first frame waits for them) cost what the run's
few bookkeeping rows cost, not a look-up of each of the run's rows for its kind: a run's rows of one kind are read
from the kind index from the run's first row when the run holds more rows than the store has of that kind after it
(issue 34: long_1m's first runs took 2.6 s of CPU, the first frame waited for them). Against bare SQL."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from benchmarks.make_long_run import write_clones
from zymi_tui.events.runs import RUN_TAGS, list_runs, newest_runs
from zymi_tui.events.sqlite_read import SqliteReader

EVENTS = 40_000
BOUND = 15  # newest_runs' CPU over the bare reads' (main: 31-34; now 5.2-5.8)


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("long") / "events.db"
    write_clones(db, EVENTS)
    return db


def bare_reads(db: Path) -> float:
    """CPU seconds of the bookkeeping rows read by SQL through the kind index, and one pass over an index of the
    whole table (what a run's first row and size cost at most), best of 5."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    best = float("inf")
    for _ in range(5):
        t = time.process_time()
        for tag in RUN_TAGS:
            con.execute("SELECT id, stream_id, sequence, data FROM events WHERE kind_tag = ?", (tag,)).fetchall()
        con.execute("SELECT count(*), min(id) FROM events INDEXED BY idx_events_stream_seq").fetchone()
        best = min(best, time.process_time() - t)
    con.close()
    return best


async def test_the_newest_runs_of_one_long_run_cost_its_bookkeeping_rows(long_store: Path) -> None:
    async with await SqliteReader.open(long_store) as reader:
        every = await list_runs(reader, turns=True)
        best = float("inf")
        for _ in range(3):
            t = time.process_time()
            page, _ = await newest_runs(reader, 60, turns=True)
            best = min(best, time.process_time() - t)
        assert page == every  # (one stream: its every turn)
        assert reader.problems == []
    bare = bare_reads(long_store)
    assert best <= BOUND * bare, f"newest_runs {best:.4f} s of CPU vs the bare reads {bare:.4f} s"


async def test_a_runs_rows_of_one_kind_are_those_sql_gives(long_store: Path) -> None:
    """Either way of reading (the kind index from the run's first row, or the run's own index), every row of the
    run and its steps of that kind, in global order, paged: against SQL."""
    con = sqlite3.connect(f"file:{long_store}?mode=ro", uri=True)
    run = con.execute("SELECT stream_id FROM events ORDER BY id LIMIT 1").fetchone()[0].split(":step:")[0]
    async with await SqliteReader.open(long_store) as reader:
        for tag in (*RUN_TAGS, "llm_call_started", "tool_call_completed", "no_such_kind"):
            expected = con.execute(
                "SELECT id, stream_id, sequence, data FROM events WHERE kind_tag = ? AND "
                "(stream_id = ? OR substr(stream_id, 1, ?) = ?) ORDER BY id",
                (tag, run, len(run) + 6, run + ":step:"),
            ).fetchall()
            got: list[tuple[object, ...]] = []
            cursor = 0
            while True:
                page = await reader.read_rows(cursor, 997, stream_id=run, tag=tag)
                got += [tuple(row) for row in page.rows]
                cursor = page.last_global_id
                if page.rows_scanned < 997:
                    break
            assert got == expected, tag
        assert (await reader.read_rows(0, 10, stream_id="no-such-run", tag=RUN_TAGS[0])).rows == []
    con.close()
