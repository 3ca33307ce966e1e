"""zymi's SQLite schema (its DDL verbatim, the hash-column migration), made safely by concurrent first
writers; and what an SQLite error means, in one line a person can act on."""

from __future__ import annotations

import sqlite3
import time

from zymi_tui.events.store import StoreError, StoreLocked

# zymi's DDL, verbatim (events/store/sqlite.rs), so `sqlite_master` reads the same.
SCHEMA = """CREATE TABLE IF NOT EXISTS events (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 event_id TEXT NOT NULL UNIQUE,
                 stream_id TEXT NOT NULL,
                 sequence INTEGER NOT NULL,
                 timestamp TEXT NOT NULL,
                 kind_tag TEXT NOT NULL,
                 data TEXT NOT NULL,
                 correlation_id TEXT,
                 causation_id TEXT,
                 source TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS idx_events_stream_seq
                 ON events(stream_id, sequence);
             CREATE INDEX IF NOT EXISTS idx_events_correlation
                 ON events(correlation_id);
             CREATE INDEX IF NOT EXISTS idx_events_kind
                 ON events(kind_tag);
             CREATE TABLE IF NOT EXISTS stream_heads (
                 stream_id TEXT PRIMARY KEY,
                 last_sequence INTEGER NOT NULL,
                 last_hash TEXT NOT NULL
             );"""

HASH_MIGRATION = """ALTER TABLE events ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
                 ALTER TABLE events ADD COLUMN hash TEXT NOT NULL DEFAULT '';"""

LOCK_WAIT_S = 5.0  # a reader's wait for a lock, in all (sqlite_read.py), said when it runs out

WRITE_BUSY_MS = 5000  # zymi's busy_timeout


def explain_sqlite_error(path: str, err: BaseException) -> StoreError:
    """One line that says what is wrong with the file and what to do."""
    text = str(err)
    low = text.lower()
    if "locked" in low or "busy" in low:
        return StoreLocked(
            f"{path} is locked by another process and stayed locked for {LOCK_WAIT_S:.0f} s: try again "
            "in a moment, or stop the process that holds it"
        )
    if "not a database" in low:
        return StoreError(f"{path} is not a SQLite database: pass a zymi events.db or a project folder")
    if "malformed" in low or "disk image" in low or "truncat" in low:
        return StoreError(
            f"{path} is damaged (SQLite: {text}); it may be truncated. Restore it from a copy, "
            "or try `sqlite3 FILE .recover` on a copy"
        )
    if "unable to open" in low:
        return StoreError(f"cannot open {path}: {text} (check that it exists and is readable)")
    return StoreError(f"{path}: SQLite error: {text}")


def is_locked(err: BaseException) -> bool:
    low = str(err).lower()
    return "locked" in low or "busy" in low


SCHEMA_OBJECTS = ("events", "stream_heads", "idx_events_stream_seq", "idx_events_correlation", "idx_events_kind")


def schema_complete(conn: sqlite3.Connection) -> bool:
    marks = ",".join("?" * len(SCHEMA_OBJECTS))
    row = conn.execute(
        f"SELECT (SELECT COUNT(*) FROM sqlite_master WHERE name IN ({marks})), "
        "(SELECT COUNT(*) FROM pragma_table_info('events') WHERE name IN ('prev_hash', 'hash'))",
        SCHEMA_OBJECTS,
    ).fetchone()
    return bool(row == (len(SCHEMA_OBJECTS), 2))


def create_schema(conn: sqlite3.Connection) -> None:
    """zymi's DDL and hash-column migration, safe when several processes create the same new store at
    once: the column check and the ALTERs run inside one `BEGIN IMMEDIATE` (zymi checks, then alters,
    unlocked: two of them can both add `prev_hash`, and the second fails with "duplicate column
    name"). A store that already has it all is not locked at all."""
    if schema_complete(conn):
        return
    conn.execute("BEGIN IMMEDIATE")  # waits up to busy_timeout for another creator
    try:
        for statement in (*SCHEMA.split(";"), *HASH_MIGRATION.split(";")):
            if not statement.strip():
                continue
            if statement.strip().startswith("ALTER") and has_hash_columns(conn):
                continue
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def has_hash_columns(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT COUNT(*) FROM pragma_table_info('events') WHERE name = 'hash'").fetchone()
    return bool(row and row[0])


def switch_to_wal_and_schema(conn: sqlite3.Connection) -> None:
    """WAL and the schema, retried while the store is locked, up to the busy timeout. SQLite answers
    "database is locked" at once, without its busy wait, where waiting could deadlock (a reader asking
    for the write lock while another new writer switches the same new file to WAL): seen in 1 of ~6
    runs of twelve processes creating one store at once."""
    deadline = time.monotonic() + WRITE_BUSY_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            create_schema(conn)
            return
        except sqlite3.OperationalError as e:
            if not is_locked(e) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
