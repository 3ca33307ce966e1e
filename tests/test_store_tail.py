"""The tail watcher against another process appending as zymi does (WAL, BEGIN IMMEDIATE)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import uuid
from pathlib import Path

import pytest

from tests.waiting import LIMIT
from zymi_tui.events import sqlite_read as backend
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.store import EventReader, StoreLocked
from zymi_tui.events.stored import StoredEvent
from zymi_tui.events.tail import tail

from .conftest import copy_store, oracle_db

N = 2000

WRITER = """
import asyncio, sys
from zymi_tui.events.kinds import Event
from zymi_tui.events.kinds import LlmCallStarted
from zymi_tui.events.sqlite_write import SqliteWriter

async def main(db, n):
    writer = await SqliteWriter.open(db)
    for i in range(n):
        run = f"run-{i // 100}"
        stream = run if i % 2 else run + ":step:a"
        kind = LlmCallStarted(iteration=i, message_count=1, approx_context_chars=i)
        await writer.append(Event.new(stream, kind, "w"))
        if i % 100 == 99:
            await writer.checkpoint()  # as zymi does after each run's terminal event
    await writer.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def collect(reader: EventReader, after: int, n: int, stop: asyncio.Event) -> list[StoredEvent]:
    got: list[StoredEvent] = []
    async for batch in tail(reader, after, poll_s=0.02, batch=128, stop=stop):
        got += batch
        if len(got) >= n:
            stop.set()
    return got


async def keep_reading(db: Path, stop: asyncio.Event) -> int:
    """A second reader scanning the whole store over and over while the writer writes."""
    scans = 0
    async with await SqliteReader.open(db) as reader:
        while not stop.is_set():
            await reader.read_after(0, 10_000)
            scans += 1
            await asyncio.sleep(0)
    return scans


async def test_every_event_appended_by_another_process_is_seen_once_in_order(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    async with await SqliteWriter.open(db):  # the store exists, in WAL mode, before the reader opens it
        pass
    reader = await SqliteReader.open(db)
    stop = asyncio.Event()
    watcher = asyncio.create_task(collect(reader, 0, N, stop))
    scanner = asyncio.create_task(keep_reading(db, stop))
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WRITER,
            str(db),
            str(N),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, errs = await asyncio.wait_for(proc.communicate(), timeout=LIMIT)
        assert proc.returncode == 0, errs.decode()
        assert b"locked" not in errs
        got = await asyncio.wait_for(watcher, timeout=LIMIT)
    finally:
        stop.set()
        await reader.close()
    assert await scanner > 0

    ids = [se.global_id for se in got]
    assert ids == list(range(1, N + 1))  # each once, in commit order, none missed
    assert [se.event.kind.iteration for se in got] == list(range(N))  # type: ignore[union-attr]
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == N


async def test_tail_survives_a_lock_longer_than_a_read_waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rollback-journal store (as the oracle files are) held under an exclusive lock past the
    reader's wait: reads fail with StoreLocked, the tail only waits, and the row then arrives."""
    monkeypatch.setattr(backend, "LOCK_WAIT_S", 0.2)  # keeps the test short: the lock outlasts it 5x
    db = copy_store(oracle_db("memory"), tmp_path)
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    last = con.execute("SELECT max(id) FROM events").fetchone()[0]
    con.close()
    reader = await SqliteReader.open(db)
    stop = asyncio.Event()
    watcher = asyncio.create_task(collect(reader, last, 1, stop))
    await asyncio.sleep(0.1)
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("PRAGMA locking_mode=EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    new_id = str(uuid.UUID(int=2))
    locker.execute(
        "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source) "
        "SELECT ?, stream_id, 99, timestamp, kind_tag, replace(data, event_id, ?), source FROM events WHERE id = 1",
        (new_id, new_id),
    )
    try:
        with pytest.raises(StoreLocked, match="locked by another process"):
            await reader.count()
        await asyncio.sleep(1.0)
        assert not watcher.done()  # the tail did not die of the lock
        locker.execute("COMMIT")
    finally:
        locker.close()
    got = await asyncio.wait_for(watcher, timeout=LIMIT)
    assert [(se.global_id, se.event.id) for se in got] == [(last + 1, new_id)]
    await reader.close()
