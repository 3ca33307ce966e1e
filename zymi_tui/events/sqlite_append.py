"""A SQLite store's appends without an event loop: the connection zymi's writer opens (its pragmas and
schema) and one transaction of rows as zymi's `SqliteEventStore::append` writes them (`BEGIN
IMMEDIATE`, `MAX(sequence)+1`, v2 hash, `stream_heads` upsert). `sqlite_write.SqliteWriter` runs them in
its event loop; a `run` writes its first event with them before it imports asyncio (engine/run_request.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from zymi_tui.events.hashchain import hash_v2
from zymi_tui.events.sqlite_file import note_store
from zymi_tui.events.sqlite_schema import WRITE_BUSY_MS, explain_sqlite_error, is_locked, switch_to_wal_and_schema
from zymi_tui.events.store import StoreError, stat_store_path
from zymi_tui.events.stored import StoredEvent

if TYPE_CHECKING:
    from zymi_tui.events.kinds import Event


class Busy(Exception):
    """Another connection holds the write lock (an append without `wait` writes nothing)."""


def open_for_writing(path: Path) -> sqlite3.Connection:
    """The writer's connection: zymi's pragmas and schema, then no busy wait (an append that finds the
    store locked waits only when asked to). A FIFO is never opened (opening one waits for a writer)."""
    stat_store_path(path)
    note_store(path)
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


def append_rows(conn: sqlite3.Connection, label: str, rows: list[tuple[Event, str]], wait: bool) -> list[StoredEvent]:
    """BEGIN IMMEDIATE, each row (an event and its `data` text) as zymi appends it, COMMIT (or ROLLBACK).
    Without `wait`, a store locked by another connection raises `Busy` before anything is written; with
    it, the append waits for the lock up to zymi's busy timeout."""
    if wait:
        conn.execute(f"PRAGMA busy_timeout={WRITE_BUSY_MS}")
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if not wait and is_locked(e):
                raise Busy from None
            raise
        out = [_insert(conn, event, data) for event, data in rows]
        conn.execute("COMMIT")
    except BaseException as e:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(e, sqlite3.Error):
            raise explain_sqlite_error(label, e) from None
        raise
    finally:
        if wait:
            conn.execute("PRAGMA busy_timeout=0")
    return out


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
