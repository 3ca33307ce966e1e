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
from zymi_tui.events.hashchain import hash_v2
from zymi_tui.events.sqlite_file import note_store
from zymi_tui.events.sqlite_schema import WRITE_BUSY_MS, explain_sqlite_error, is_locked, switch_to_wal_and_schema
from zymi_tui.events.store import BatchAppender, StoreError, stat_store_path
from zymi_tui.events.stored import StoredEvent

if TYPE_CHECKING:
    from zymi_tui.events.kinds import Event

T = TypeVar("T")


class _Busy(Exception):
    """Another connection holds the write lock: the append waits for it on the writer's thread."""


def _open_for_writing(path: Path) -> sqlite3.Connection:
    """The writer's connection: zymi's pragmas and schema, then no busy wait (an append that finds the
    store locked waits on the writer's thread, never in the event loop)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as e:
        raise StoreError(f"cannot open {path} for writing: {e}") from None
    try:
        # the wait first: switching a new file to WAL takes a lock another new writer may hold
        conn.execute(f"PRAGMA busy_timeout={WRITE_BUSY_MS}")
        switch_to_wal_and_schema(conn)
        conn.execute("PRAGMA busy_timeout=0")
    except BaseException as e:
        conn.close()
        if isinstance(e, sqlite3.Error):
            raise explain_sqlite_error(str(path), e) from None
        raise
    return conn


_APPEND_HEAD = (
    "SELECT COALESCE(MAX(sequence), 0) + 1, COALESCE("
    "(SELECT hash FROM events WHERE stream_id = ?1 ORDER BY sequence DESC LIMIT 1), ''"
    ") FROM events WHERE stream_id = ?1"
)
_APPEND_ROW = (
    "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, correlation_id, "
    "causation_id, source, prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
)
_APPEND_STREAM_HEAD = (
    "INSERT INTO stream_heads (stream_id, last_sequence, last_hash) VALUES (?1, ?2, ?3) "
    "ON CONFLICT(stream_id) DO UPDATE SET last_sequence = excluded.last_sequence, last_hash = excluded.last_hash"
)


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
        stat_store_path(p)  # a FIFO is never opened (opening one waits for a writer)
        note_store(p)
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zymi-tui-writer")
        opening = asyncio.get_running_loop().run_in_executor(thread, _open_for_writing, p)
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
        except _Busy:
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
            except _Busy:
                return await self._call(self._append_sync, rows, True)

    def _append_sync(self, rows: list[tuple[Event, str]], wait: bool) -> list[StoredEvent]:
        """BEGIN IMMEDIATE, each row as zymi appends it, COMMIT (or ROLLBACK). Without `wait`, a store
        locked by another connection raises `_Busy` before anything is written."""
        conn = self._conn
        if wait:
            conn.execute(f"PRAGMA busy_timeout={WRITE_BUSY_MS}")
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                if not wait and is_locked(e):
                    raise _Busy from None
                raise
            out = [self._insert(conn, event, data) for event, data in rows]
            conn.execute("COMMIT")
        except BaseException as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(e, sqlite3.Error):
                raise explain_sqlite_error(self.label, e) from None
            raise
        finally:
            if wait:
                conn.execute("PRAGMA busy_timeout=0")
        return out

    @staticmethod
    def _insert(conn: sqlite3.Connection, event: Event, data: str) -> StoredEvent:
        row = conn.execute(_APPEND_HEAD, (event.stream_id,)).fetchall()[0]  # read to the end: no statement left open
        seq, prev = int(row[0]), str(row[1])
        digest = hash_v2(event.id, seq, data, prev)
        gid = conn.execute(
            _APPEND_ROW,
            (
                event.id, event.stream_id, seq, event.column_timestamp(), event.tag, data,
                event.correlation_id, event.causation_id, event.source, prev, digest,
            ),
        ).lastrowid  # fmt: skip
        conn.execute(_APPEND_STREAM_HEAD, (event.stream_id, seq, digest))
        assert gid is not None
        return StoredEvent(gid, event.stored_as(seq), data)

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
