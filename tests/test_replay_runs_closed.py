"""A long chat stream's runs (a turn each, one correlation id each) are dropped as each turn completes,
not kept to the stream's end: a completion that no later row of the store carries the correlation id
of closes its run (`RunClosings`, `Replayer.forget_finished`). Where a later row does carry it (a run
resumed, a node or memory written after the completion, a second completion), the run is kept and the
rows are those of a replay that drops no run at all."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from benchmarks.make_long_run import write_clones
from tests.test_replay_runs_dropped import runs_held
from zymi_tui.commands.replay_json import row_json
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import location_of
from zymi_tui.replay import calls
from zymi_tui.replay.store_replay import replay_store

TURNS = 40


def _count(db: Path, sql: str) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def test_a_long_chat_stream_holds_its_turn_in_progress_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "long.db"
    write_clones(db, TURNS * 60, "memory")
    turns = _count(db, "SELECT COUNT(DISTINCT correlation_id) FROM events WHERE kind_tag = 'pipeline_requested'")
    streams = _count(db, "SELECT COUNT(DISTINCT stream_id) FROM events WHERE stream_id NOT LIKE '%:step:%'")
    assert turns >= TURNS - 1 and streams == 1  # the oracle: one run stream, a correlation id a turn
    rows, made, most = runs_held(db, monkeypatch)
    assert rows >= turns and made >= turns  # every turn's run was made and its calls replayed
    assert most <= 3, f"{most} runs held at once (of {turns} turns)"


# -- rows that refer to a run after its completion ----------------------------------------------------


def _turns(conn: sqlite3.Connection) -> list[str]:
    return [
        c
        for (c,) in conn.execute("SELECT correlation_id FROM events WHERE kind_tag = 'pipeline_requested' ORDER BY id")
    ]


def _recorrelate(conn: sqlite3.Connection, where: str, corr: str) -> int:
    """Give the rows `where` selects the correlation id `corr`, in the column and in the event's JSON."""
    cur = conn.execute(
        f"UPDATE events SET correlation_id = ?, data = json_set(data, '$.correlation_id', ?) WHERE {where}",
        (corr, corr),
    )
    return cur.rowcount


HOSTILE = {
    # turn 2 goes on under turn 1's correlation id: its run found again, with turn 1's memory and outputs
    "resumed": "correlation_id = :second",
    # turn 2's node starts under turn 1's id: that step takes turn 1's run
    "late node": "correlation_id = :second AND kind_tag = 'workflow_node_started'",
    # memory written to turn 1's run after it completed
    "late memory": "correlation_id = :second AND kind_tag = 'memory_written'",
    # turn 1 completed a second time, later
    "completed twice": "correlation_id = :second AND kind_tag = 'pipeline_completed'",
    # the last turn resumes the first (the reference long after the completion)
    "last resumes first": "correlation_id = :last",
}


async def _rows(db: Path) -> list[str]:
    reader = await open_reader(location_of(db))
    try:
        return [
            json.dumps(row_json(r, messages=True), sort_keys=True) async for r in replay_store(reader, project=None)
        ]
    finally:
        await reader.close()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_run_referred_to_after_its_completion_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    db = tmp_path / "long.db"
    write_clones(db, 6 * 60, "memory")
    conn = sqlite3.connect(db)
    turns = _turns(conn)
    where = HOSTILE[case].replace(":second", "'" + turns[1] + "'").replace(":last", "'" + turns[-1] + "'")
    assert _recorrelate(conn, where, turns[0]) > 0
    conn.commit()
    conn.close()
    rows = asyncio.run(_rows(db))
    # the reference: a replay that drops no run (nor anything else) before the store's end
    monkeypatch.setattr(calls.Replayer, "forget_finished", lambda self, ends, closings=None: None)
    kept = asyncio.run(_rows(db))
    assert len(rows) >= 6 and rows == kept
