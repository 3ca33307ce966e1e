"""Several writers, one tailing reader: no gap, no duplicate, every chain verifies, every event
delivered once, in order; an id committed after a higher one is never skipped.

How quickly (the tail delay, an append's latency while a reader reads) is a figure, measured by
`benchmarks/bench_postgres.py` against SQLite in the same run, not asserted here: a machine under
load makes any wall-clock bound flaky."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from zymi_tui.events import postgres_read
from zymi_tui.events.kinds import Event, ResponseReady
from zymi_tui.events.postgres_read import PostgresReader
from zymi_tui.events.postgres_write import PostgresWriter
from zymi_tui.events.tail import DEFAULT_POLL_S, tail
from zymi_tui.events.verify import verify_store

from .test_postgres_helpers import pg_url
from .waiting import LIMIT

__all__ = ["pg_url"]

WRITERS, PER_WRITER, STREAMS = 4, 1000, 6
# One writer process: appends n events round-robin over streams it shares with the others, and
# logs the id of each event once its append (its commit) has returned.
WRITER = """
import asyncio, json, sys
from zymi_tui.events.kinds import Event
from zymi_tui.events.kinds import ResponseReady
from zymi_tui.events.factory import open_writer
from zymi_tui.events.location import location_of

async def main(url, me, n, streams, log_path, go):
    writer = await open_writer(location_of(url))
    while not __import__("os").path.exists(go):
        await asyncio.sleep(0.005)
    log = []
    for i in range(n):
        stream = f"s{(i + me) % streams}"
        event = Event.new(stream, ResponseReady(conversation_id=stream, content=f"{me}:{i}"), f"w{me}")
        se = await writer.append(event)
        log.append(se.event.id)
    await writer.close()
    with open(log_path, "w") as f:
        json.dump(log, f)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]))
"""


def response(stream: str, text: str) -> Event:
    return Event.new(stream, ResponseReady(conversation_id=stream, content=text), "test")


async def test_four_writer_processes_one_tailing_reader(pg_url: str, tmp_path: Path) -> None:
    async with await PostgresWriter.open(pg_url):
        pass  # the schema first, so the reader can open before the writers start
    go = tmp_path / "go"
    # commits stay atomic and ordered; only the wait for their flush to disk is skipped (a fast test)
    fast = pg_url + "&synchronous_commit=off"
    args = [sys.executable, "-c", WRITER, fast, "", str(PER_WRITER), str(STREAMS), "", str(go)]
    procs = []
    for me in range(WRITERS):
        args[4], args[7] = str(me), str(tmp_path / f"w{me}.json")
        procs.append(subprocess.Popen(list(args)))
    reader = await PostgresReader.open(pg_url)
    seen: list[tuple[int, str]] = []
    stop = asyncio.Event()

    async def follow() -> None:
        async for batch in tail(reader, 0, poll_s=DEFAULT_POLL_S, stop=stop):
            seen.extend((se.global_id, se.event.id) for se in batch)
            if len(seen) >= WRITERS * PER_WRITER:
                stop.set()

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0.3)
    go.touch()
    try:
        for p in procs:
            assert await asyncio.to_thread(p.wait, 120) == 0
        await asyncio.wait_for(follower, 10)
    finally:
        for p in procs:
            p.kill() if p.poll() is None else None
        stop.set()

    # every event once, in global order
    ids = [gid for gid, _ in seen]
    assert len(seen) == WRITERS * PER_WRITER
    assert ids == sorted(set(ids))
    conn = await asyncpg.connect(pg_url)
    try:
        assert ids == [r[0] for r in await conn.fetch("SELECT id FROM events ORDER BY id")]
        per_stream = await conn.fetch(
            "SELECT stream_id, COUNT(*), COUNT(DISTINCT sequence), MIN(sequence), MAX(sequence) FROM events "
            "GROUP BY stream_id"
        )
    finally:
        await conn.close()
    # no gap, no duplicate sequence in any stream, every chain verifies
    assert sum(r[1] for r in per_stream) == WRITERS * PER_WRITER and len(per_stream) == STREAMS
    assert all(n == distinct == last and first == 1 for _, n, distinct, first, last in per_stream)
    verdicts = (await verify_store(reader)).verdicts
    assert [v.stream_id for v in verdicts if v.ok] == [f"s{i}" for i in range(STREAMS)]
    await reader.close()

    # every event a writer logged as committed was delivered, exactly once
    logged: list[str] = []
    for me in range(WRITERS):
        logged.extend(json.loads((tmp_path / f"w{me}.json").read_text()))
    assert sorted(logged) == sorted(eid for _, eid in seen)


async def _held_insert(writer: PostgresWriter, url: str, stream: str) -> tuple[asyncpg.Connection, asyncpg.Transaction]:
    """An append that has taken its id but not committed: what a slow writer looks like."""
    conn = await asyncpg.connect(url)
    tx = conn.transaction()
    await tx.start()
    await writer._insert(conn, response(stream, "held"))
    return conn, tx


@dataclass
class Gap:
    writer: PostgresWriter
    reader: PostgresReader
    conn: asyncpg.Connection
    tx: asyncpg.Transaction  # of `conn`, holding id 2 uncommitted


@pytest.fixture
async def gap(pg_url: str) -> AsyncIterator[Gap]:
    """Id 1 written and read; id 2 inserted in a transaction held open; id 3 committed after it."""
    writer = await PostgresWriter.open(pg_url)
    await writer.append(response("a", "first"))  # id 1
    reader = await PostgresReader.open(pg_url)
    try:
        assert [e.global_id for e in (await reader.read_after(0, 100)).events] == [1]
        conn, tx = await _held_insert(writer, pg_url, "b")  # id 2, open
        await writer.append(response("c", "after"))  # id 3, committed
        yield Gap(writer, reader, conn, tx)
    finally:
        await reader.close()
        await writer.close()


async def test_a_lower_id_committed_later_is_not_skipped(gap: Gap) -> None:
    assert await gap.writer._pool.fetchval("SELECT array_agg(id) FROM events WHERE id > 1") == [3]  # naive tail: 3
    page = await gap.reader.read_after(1, 100)
    assert page.events == [] and page.last_global_id == 1
    assert await gap.reader.max_global_id() == 1
    await gap.tx.commit()
    await gap.conn.close()
    page = await gap.reader.read_after(1, 100)
    assert [e.global_id for e in page.events] == [2, 3] and page.last_global_id == 3


async def test_a_rolled_back_id_is_passed_promptly(gap: Gap) -> None:
    await gap.tx.rollback()
    await gap.conn.close()
    assert postgres_read.GIVE_UP_S >= 30  # so the very next read passing id 2 is not the give-up path
    page = await gap.reader.read_after(1, 100)
    assert [e.global_id for e in page.events] == [3] and page.last_global_id == 3


async def test_a_gap_held_open_too_long_is_skipped_then_delivered_late(
    gap: Gap, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_read, "GIVE_UP_S", 0.3)
    assert (await gap.reader.read_after(1, 100)).events == []
    await asyncio.sleep(0.35)
    page = await gap.reader.read_after(1, 100)
    assert [e.global_id for e in page.events] == [3] and page.last_global_id == 3
    await gap.tx.commit()
    await gap.conn.close()
    page = await gap.reader.read_after(3, 100)
    assert [e.global_id for e in page.events] == [2]  # late, but not lost
    assert (await gap.reader.read_after(3, 100)).events == []


async def test_a_reader_never_blocks_a_writer(pg_url: str) -> None:
    writer = await PostgresWriter.open(pg_url)
    for i in range(20):
        await writer.append(response(f"s{i % 3}", "x"))
    reader = await PostgresReader.open(pg_url)
    try:
        async with reader._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            assert len(await conn.fetch("SELECT * FROM events")) == 20  # a snapshot and a lock held open
            stop = asyncio.Event()

            async def keep_reading() -> None:
                cursor = 0
                while not stop.is_set():
                    cursor = (await reader.read_after(cursor, 5)).last_global_id

            busy = asyncio.create_task(keep_reading())

            async def append_all() -> None:
                for i in range(100):
                    await writer.append(response(f"s{i % 3}", "y"))

            # an append a reader blocked would wait for this transaction, held open until every append
            # returns: it would never return (LIMIT turns that hang into a failure)
            await asyncio.wait_for(append_all(), LIMIT)
            stop.set()
            await busy
            assert len(await conn.fetch("SELECT * FROM events")) == 20  # the reader's snapshot stood
        assert await reader.count() == 120
    finally:
        await reader.close()
        await writer.close()
