"""An append that finds the store's write lock held by another connection waits for it (zymi's busy
timeout) without stopping the event loop, and then writes its event as usual."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path

from zymi_tui.events.kinds import Event, WorkflowCompleted
from zymi_tui.events.sqlite_write import SqliteWriter


def event(stream: str) -> Event:
    return Event.new(stream, WorkflowCompleted(success=True), "engine", str(uuid.uuid4()))


async def test_append_waits_for_a_lock_held_elsewhere_with_the_loop_running(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    async with await SqliteWriter.open(db) as writer:
        await writer.append(event("a"))
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process writing
        append = asyncio.ensure_future(writer.append(event("a")))
        ticks = 0
        while ticks < 20:  # the loop keeps turning while the append waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert not append.done()
        other.execute("COMMIT")
        other.close()
        stored = await asyncio.wait_for(append, 60)
        assert stored.event.sequence == 2
        after = await writer.append(event("a"))  # and the next append takes the quick path again
        assert after.event.sequence == 3
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT stream_id, sequence FROM events ORDER BY id").fetchall() == [
            ("a", 1),
            ("a", 2),
            ("a", 3),
        ]
        assert con.execute("SELECT last_sequence FROM stream_heads WHERE stream_id = 'a'").fetchone() == (3,)
    finally:
        con.close()
