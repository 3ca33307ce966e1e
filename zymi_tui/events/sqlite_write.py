"""The SQLite writer: appends exactly as zymi's `SqliteEventStore::append` (zymi's pragmas and schema,
`BEGIN IMMEDIATE`, `MAX(sequence)+1`, v2 hash, `stream_heads` upsert)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from zymi_tui.events.atomic import Transactions
from zymi_tui.events.sqlite_append import Busy, append_rows, open_for_writing
from zymi_tui.events.sqlite_schema import explain_sqlite_error, is_locked
from zymi_tui.events.store import BatchAppender
from zymi_tui.events.stored import StoredEvent

if TYPE_CHECKING:
    from zymi_tui.events.kinds import Event

T = TypeVar("T")


class SqliteWriter(BatchAppender):
    """Appends events exactly as zymi's `SqliteEventStore::append` does.

    An append (BEGIN IMMEDIATE … COMMIT, one short transaction) runs in the event loop: handing it
    to a thread and back cost more than the append itself. Only when another connection holds the
    write lock does it go to the writer's own thread, to wait there (zymi's 5 s busy timeout); opening,
    the WAL checkpoint and closing run there too. The asyncio lock lets one of them use the
    connection at a time."""

    def __init__(self, path: Path, conn: sqlite3.Connection, thread: ThreadPoolExecutor) -> None:
        self.path = path
        self.label = str(path)
        self._conn = conn
        self._thread = thread
        self._lock = asyncio.Lock()
        self._transactions = Transactions()

    @classmethod
    async def open(cls, path: str | Path) -> SqliteWriter:
        p = Path(path).expanduser()
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zymi-tui-writer")
        opening = asyncio.get_running_loop().run_in_executor(thread, open_for_writing, p)
        try:
            # if the caller is cancelled meanwhile (Ctrl-C), the connection is still waited for and closed
            conn = await asyncio.shield(opening)
        except BaseException:
            await asyncio.wait({opening})
            if not opening.cancelled() and opening.exception() is None:
                thread.submit(opening.result().close).result()
            thread.shutdown(wait=False)
            raise
        return cls(p, conn, thread)

    @classmethod
    def adopt(cls, path: Path, conn: sqlite3.Connection) -> SqliteWriter:
        """The writer of a connection `sqlite_append.open_for_writing` opened (a run's first event written)."""
        return cls(path, conn, ThreadPoolExecutor(max_workers=1, thread_name_prefix="zymi-tui-writer"))

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    async def close(self) -> None:
        await self._transactions.finish()
        try:
            await self._call(self._conn.close)
        finally:
            self._thread.shutdown(wait=False)

    def append_now(self, event: Event) -> StoredEvent | None:
        """With nothing else of this writer under way and the store not locked by another connection,
        the transaction runs here and now: no await in it (no cancellation can land inside), no task
        and no loop turns around it. None (nothing written) otherwise."""
        return out[0] if (out := self._now([(event, event.to_json())])) else None

    def _now(self, rows: list[tuple[Event, str]]) -> list[StoredEvent] | None:
        if self._lock.locked() or not self._transactions.idle():
            return None
        try:
            return self._append_sync(rows, wait=False)
        except Busy:
            return None

    async def append_many(self, events: Sequence[Event]) -> list[StoredEvent]:
        """Append in one transaction (zymi appends one event per transaction; so does `append`).
        The transaction commits or rolls back even if the caller is cancelled meanwhile."""
        rows = [(e, e.to_json()) for e in events]
        done = self._now(rows)
        if done is not None:
            return done
        # another of this writer's transactions is under way, or another connection holds the write
        # lock: in turn, waiting on the writer's thread
        return await self._transactions.run(self._append_tx(rows))

    async def _append_tx(self, rows: list[tuple[Event, str]]) -> list[StoredEvent]:
        async with self._lock:
            try:
                return self._append_sync(rows, wait=False)
            except Busy:
                return await self._call(self._append_sync, rows, True)

    def _append_sync(self, rows: list[tuple[Event, str]], wait: bool) -> list[StoredEvent]:
        return append_rows(self._conn, self.label, rows, wait)

    async def checkpoint(self) -> None:
        """`PRAGMA wal_checkpoint(PASSIVE)`, as zymi runs after a run's terminal event (ADR-0030).
        Taken in turn with the appends and finished even if the caller is cancelled."""
        await self._transactions.run(self._checkpoint_tx())

    async def _checkpoint_tx(self) -> None:
        async with self._lock:
            await self._call(self._checkpoint_sync)

    def _checkpoint_sync(self) -> None:
        try:
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as e:
            if not is_locked(e):
                raise explain_sqlite_error(self.label, e) from None
