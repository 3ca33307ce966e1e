"""A whole-store replay reads the kinds it needs in one pass over the store in global order (not one
index walk per kind, merged), and yields what a whole-event read of those rows gives: the events of
the kinds the `kind_tag` column names (whatever their `data` says), rows it cannot read skipped and
named once, on SQLite and on Postgres."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from zymi_tui.events.envelope import EventDecodeError, decode_event
from zymi_tui.events.postgres_read import PostgresReader
from zymi_tui.events.postgres_write import PostgresWriter
from zymi_tui.events.replay_view import ReplayEvent, replay_event
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import EventReader
from zymi_tui.events.stored import StoredEvent
from zymi_tui.replay import event_pages
from zymi_tui.replay.call_context import REPLAY_KINDS
from zymi_tui.replay.event_pages import replay_events

from .conftest import ORACLE, cloned_runs, write_sql
from .test_postgres_helpers import pg_url

__all__ = ["pg_url"]  # the fixture, imported for pytest

SMALL_PAGE = 40


def _tamper(db: Path) -> dict[str, int]:
    """Rows changed as a hand or a bug could: each change's row id, by what was done to it."""
    with contextlib.closing(sqlite3.connect(db)) as c:

        def first(tag: str, n: int = 0) -> int:
            row = c.execute("SELECT id FROM events WHERE kind_tag = ? ORDER BY id LIMIT 1 OFFSET ?", (tag, n))
            return int(row.fetchone()[0])

        done = {
            "cut_short": first("llm_call_completed", 1),  # its JSON cut short: no reader decodes it
            "tag_of_another_replay_kind": first("tool_call_completed", 2),  # data: a ToolCallCompleted
            "tag_of_a_kind_not_replayed": first("llm_call_started", 3),  # data: a replay kind, tag: not
            "unknown_kind_in_data": first("memory_written", 0),
            "stream_id_a_blob": first("workflow_node_started", 1),
            "sequence_as_text": first("tool_call_completed", 4),
            "data_a_blob": first("llm_call_started", 6),
            "kind_tag_a_blob": first("llm_call_completed", 7),
        }  # fmt: skip
    sets = {
        "cut_short": "data = substr(data, 1, 60)",
        "tag_of_another_replay_kind": "kind_tag = 'llm_call_started'",
        "tag_of_a_kind_not_replayed": "kind_tag = 'intention_emitted'",
        "unknown_kind_in_data": 'data = replace(data, \'"type":"\', \'"type":"FutureThing\')',
        "stream_id_a_blob": "stream_id = CAST(stream_id AS BLOB)",
        "sequence_as_text": "sequence = 'x' || sequence",
        "data_a_blob": "data = CAST(data AS BLOB)",
        "kind_tag_a_blob": "kind_tag = CAST(kind_tag AS BLOB)",
    }
    for what, gid in done.items():
        write_sql(db, f"UPDATE events SET {sets[what]} WHERE id = ?", gid)
    return done


def _whole_event_read(db: Path) -> tuple[list[ReplayEvent], list[int]]:
    """What the replay should yield, read with plain sqlite3 and the whole-event decoder (not the replay's
    typed one): every row whose `kind_tag` is a replay kind's, in id order; and the ids of those that
    cannot be read."""
    events: list[ReplayEvent] = []
    bad: list[int] = []
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
        rows = c.execute("SELECT id, stream_id, sequence, kind_tag, data FROM events ORDER BY id").fetchall()
    for gid, stream_id, seq, tag, data in rows:
        if type(tag) is not str or tag not in REPLAY_KINDS:
            continue
        if type(stream_id) is not str or type(seq) is not int:
            bad.append(gid)
            continue
        text = data if type(data) is str else data.decode()
        try:
            events.append(replay_event(StoredEvent(gid, decode_event(text, seq), text)))
        except EventDecodeError:
            bad.append(gid)
    return events, bad


async def _replayed(reader: EventReader) -> tuple[list[ReplayEvent], list[int]]:
    events = [se async for se in replay_events(reader, None)]
    return events, sorted({b.global_id for b in reader.problems})


async def test_a_replay_reads_the_store_once_in_global_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each statement that reads `events` returns the next page of the replay's rows: as many statements
    as pages, each on the table's id order (per kind, it was a dozen index walks and more pages)."""
    monkeypatch.setattr(event_pages, "PAGE", SMALL_PAGE)
    db = cloned_runs(tmp_path, 3)
    with contextlib.closing(sqlite3.connect(db)) as c:
        wanted = c.execute(
            f"SELECT COUNT(*) FROM events WHERE kind_tag IN ({','.join('?' * len(REPLAY_KINDS))})", REPLAY_KINDS
        ).fetchone()[0]
    statements: list[str] = []
    async with await SqliteReader.open(db) as reader:
        await reader._conn.set_trace_callback(statements.append)
        events = [se async for se in replay_events(reader, None)]
        await reader._conn.set_trace_callback(lambda _: None)
        plans = [
            await reader._conn.execute_fetchall(f"EXPLAIN QUERY PLAN {s.split(' LIMIT ')[0]}") for s in statements[:1]
        ]
    assert len(events) == wanted > 5 * SMALL_PAGE
    reads = [s for s in statements if " FROM events " in s]
    assert len(reads) == wanted // SMALL_PAGE + 1, reads[:14]
    assert ["USING INTEGER PRIMARY KEY" in row[3] for plan in plans for row in plan] == [True]
    assert [se.global_id for se in events] == sorted(se.global_id for se in events)


async def test_one_pass_yields_what_a_whole_event_read_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interleaved kinds of 3 runs, an unknown kind, and 8 tampered rows, over pages smaller than a run:
    the same events (the `kind_tag` column decides what is read, the data what it is) and the same rows
    named unreadable, each once."""
    monkeypatch.setattr(event_pages, "PAGE", SMALL_PAGE)
    db = cloned_runs(tmp_path, 3, "memory")
    done = _tamper(db)
    want, want_bad = _whole_event_read(db)
    async with await SqliteReader.open(db) as reader:
        got, got_bad = await _replayed(reader)
    assert got == want
    assert got_bad == want_bad == sorted(done[k] for k in ("cut_short", "stream_id_a_blob", "sequence_as_text"))
    kinds = {se.global_id: se.kind for se in got}
    assert done["tag_of_a_kind_not_replayed"] not in kinds and done["kind_tag_a_blob"] not in kinds
    assert type(kinds[done["tag_of_another_replay_kind"]]).__name__ == "ToolCallCompleted"
    assert kinds[done["unknown_kind_in_data"]] is None and kinds[done["data_a_blob"]] is not None


async def _append_to_postgres(db: Path, url: str) -> None:
    """The store's events appended by our Postgres writer."""
    async with await SqliteReader.open(db) as reader:
        page = await reader.read_after(0, 100_000)
    writer = await PostgresWriter.open(url)
    try:
        await writer.append_many([se.event for se in page.events])
    finally:
        await writer.close()


async def _same_rows(db: Path, url: str) -> None:
    """The Postgres rows' kind tags and data set to the SQLite store's (so the same rows are tampered)."""
    with contextlib.closing(sqlite3.connect(db)) as c:
        rows = c.execute("SELECT kind_tag, data FROM events ORDER BY id").fetchall()
    conn = await asyncpg.connect(url)
    try:
        ids = [r[0] for r in await conn.fetch("SELECT id FROM events ORDER BY id")]
        assert len(ids) == len(rows)
        await conn.executemany(
            "UPDATE events SET kind_tag = $2, data = $3 WHERE id = $1",
            [(gid, tag, data) for gid, (tag, data) in zip(ids, rows, strict=True)],
        )
    finally:
        await conn.close()


async def test_postgres_one_pass_yields_what_a_whole_event_read_gives(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on Postgres: the kinds read in one statement per page, and the same events as the
    whole-event read of the same rows (the tampered rows that Postgres can hold: data cut short, the
    kind tag of another replay kind or of a kind not replayed, an unknown kind)."""
    monkeypatch.setattr(event_pages, "PAGE", SMALL_PAGE)
    db = cloned_runs(tmp_path, 2)
    with contextlib.closing(sqlite3.connect(db)) as c:
        first = {t: c.execute("SELECT MIN(id) FROM events WHERE kind_tag = ?", (t,)).fetchone()[0]
                 for t in ("llm_call_completed", "tool_call_completed", "llm_call_started")}  # fmt: skip
    await _append_to_postgres(db, pg_url)
    write_sql(db, "UPDATE events SET data = substr(data, 1, 60) WHERE id = ?", first["llm_call_completed"])
    write_sql(db, "UPDATE events SET kind_tag = 'llm_call_started' WHERE id = ?", first["tool_call_completed"])
    write_sql(db, "UPDATE events SET kind_tag = 'intention_emitted' WHERE id = ?", first["llm_call_started"])
    await _same_rows(db, pg_url)
    want, want_bad = _whole_event_read(db)
    reader = await PostgresReader.open(pg_url)
    statements: list[Any] = []
    fetch = reader._fetch

    async def counted(sql: str, *params: Any) -> list[Any]:
        statements.append(sql)
        return await fetch(sql, *params)

    monkeypatch.setattr(reader, "_fetch", counted)
    try:
        got, got_bad = await _replayed(reader)
    finally:
        await reader.close()
    assert len(want) > 3 * SMALL_PAGE
    assert [se.global_id for se in got] == [se.global_id for se in want]  # Postgres numbers the rows alike
    assert got == want and got_bad == want_bad == [first["llm_call_completed"]]
    reads = [s for s in statements if "data FROM events" in s]
    assert len(reads) == len(want) // SMALL_PAGE + 1


def test_oracle_stores_replay_the_same_events_in_one_pass() -> None:
    """Every recorded store: the one pass yields exactly the whole-event read of its replay kinds."""
    import asyncio

    async def check(db: Path) -> None:
        async with await SqliteReader.open(db) as reader:
            got, bad = await _replayed(reader)
        assert (got, bad) == _whole_event_read(db), db

    stores = sorted(ORACLE.glob("*/events.db"))
    assert len(stores) >= 6
    for db in stores:
        asyncio.run(check(db))
