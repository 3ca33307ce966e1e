"""SQLite rows as stored: a store as a copy source (opened read-only) or target (zymi's schema)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite

from zymi_tui.events.postgres_schema import sqlite_column_time
from zymi_tui.events.sqlite_connect import connect
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_schema import explain_sqlite_error
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.whole_rows import COLUMNS, COPY_MARK, DATA, TS, CopyInProgress, Head, Row


class SqliteRows:
    """A SQLite store as a copy source (opened read-only) or target (created with zymi's schema)."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, hashed: bool, has_heads: bool) -> None:
        self.label = str(path)
        self._conn = conn
        self._hash_cols = "prev_hash, hash" if hashed else "'', ''"
        self._has_heads = has_heads

    @classmethod
    async def source(cls, path: str) -> SqliteRows:
        await (await SqliteReader.open(path)).close()  # one clear line if it is not a zymi store
        conn = await connect(Path(path).expanduser().resolve().as_uri() + "?mode=ro", uri=True)
        await conn.execute("PRAGMA busy_timeout=5000")
        cols = {r[1] for r in await conn.execute_fetchall("PRAGMA table_info(events)")}
        tables = {r[0] for r in await conn.execute_fetchall("SELECT name FROM sqlite_master WHERE type='table'")}
        return cls(Path(path), conn, {"prev_hash", "hash"} <= cols, "stream_heads" in tables)

    @classmethod
    async def target(cls, path: str) -> SqliteRows:
        await (await SqliteWriter.open(path)).close()  # zymi's DDL, WAL and hash columns
        conn = await connect(str(Path(path).expanduser()), isolation_level=None)
        await conn.execute("PRAGMA busy_timeout=5000")
        return cls(Path(path), conn, True, True)

    async def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return list(await self._conn.execute_fetchall(sql, params))
        except sqlite3.Error as e:
            raise explain_sqlite_error(self.label, e) from None

    async def max_id(self) -> int:
        return int((await self._all("SELECT COALESCE(MAX(id), 0) FROM events"))[0][0])

    async def count_upto(self, gid: int) -> int:
        return int((await self._all("SELECT COUNT(*) FROM events WHERE id <= ?", (gid,)))[0][0])

    async def event_id_at(self, gid: int) -> str | None:
        rows = await self._all("SELECT event_id FROM events WHERE id = ?", (gid,))
        return str(rows[0][0]) if rows else None

    async def rows(self, after: int, upto: int, limit: int) -> list[Row]:
        cols = ", ".join(COLUMNS[:-2]) + ", " + self._hash_cols
        sql = f"SELECT {cols} FROM events WHERE id > ? AND id <= ? ORDER BY id LIMIT ?"
        return [tuple(r) for r in await self._all(sql, (after, upto, limit))]

    async def heads(self) -> list[Head]:
        if not self._has_heads:
            return []
        return [(s, int(q), h) for s, q, h in await self._all("SELECT * FROM stream_heads ORDER BY stream_id")]

    async def _transaction(self, statements: Sequence[tuple[str, Sequence[Any]]], many: int = -1) -> None:
        """BEGIN IMMEDIATE, the statements (the one at index `many` run for each of its rows), COMMIT.
        Interrupted while its COMMIT is under way, the rows are in and there is nothing to roll back."""
        try:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                for i, (sql, params) in enumerate(statements):
                    if i == many:
                        await self._conn.executemany(sql, params)
                    else:
                        await self._conn.execute(sql, params)
                await self._conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.OperationalError):  # "no transaction is active"
                    await self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise explain_sqlite_error(self.label, e) from None

    async def begin_copy(self, source: str, source_upto: int) -> None:
        await self._transaction([
            (f"CREATE TABLE IF NOT EXISTS {COPY_MARK} (source TEXT NOT NULL, source_upto INTEGER NOT NULL)", ()),
            (f"DELETE FROM {COPY_MARK}", ()),
            (f"INSERT INTO {COPY_MARK} VALUES (?, ?)", (source, source_upto)),
        ])  # fmt: skip

    async def insert(self, rows: Sequence[Row]) -> None:
        marks = ", ".join("?" * len(COLUMNS))
        values = [for_sqlite(r) for r in rows]
        await self._transaction([(f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({marks})", values)], many=0)

    async def last_link(self, stream_id: str) -> tuple[int, str] | None:
        rows = await self._all(
            "SELECT sequence, hash FROM events WHERE stream_id = ? ORDER BY sequence DESC LIMIT 1", (stream_id,)
        )
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    async def has_link(self, stream_id: str, sequence: int, digest: str) -> bool:
        sql = "SELECT 1 FROM events WHERE stream_id = ? AND sequence = ? AND hash = ?"
        return bool(await self._all(sql, (stream_id, sequence, digest)))

    async def finish_copy(self, heads: Sequence[Head]) -> None:
        upsert = (
            "INSERT INTO stream_heads (stream_id, last_sequence, last_hash) VALUES (?, ?, ?) "
            "ON CONFLICT(stream_id) DO UPDATE SET last_sequence = excluded.last_sequence, "
            "last_hash = excluded.last_hash"
        )
        await self._transaction([(upsert, heads), (f"DROP TABLE IF EXISTS {COPY_MARK}", ())], many=0)

    async def close(self) -> None:
        await self._conn.close()


def for_sqlite(row: Row) -> Row:
    ts = row[TS]
    if isinstance(ts, datetime):
        ts = sqlite_column_time(row[DATA], ts)
    return (*row[:TS], ts, *row[TS + 1 :])


def sqlite_copy_mark(path: Path) -> CopyInProgress | None:
    """The COPY_MARK of the store at `path`, read-only (None when there is none, or it cannot be read)."""
    for mode in ("mode=ro", "immutable=1"):  # immutable: a WAL store in a folder this user may not write
        try:
            with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True)) as con:
                con.execute("PRAGMA busy_timeout=5000")
                if not con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (COPY_MARK,)).fetchall():
                    return None
                marks = con.execute(f"SELECT source, source_upto FROM {COPY_MARK} LIMIT 1").fetchall()
                top = con.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
                source, upto = marks[0] if marks else ("?", 0)
                return CopyInProgress(str(source), int(upto), int(top))
        except sqlite3.Error:
            continue
    return None
