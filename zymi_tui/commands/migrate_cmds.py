"""`zymi-tui migrate SRC DST`: copy an event store between SQLite and Postgres, row for row.

Rows are inserted as they are (ids, sequences, data, prev_hash and hash untouched; nothing is
recomputed), then `stream_heads`, so every chain verifies on the target. The copy runs in
batches, one transaction each, in id order, so an interrupted copy leaves a prefix of the source:
running the command again checks that the target holds exactly the source's rows up to its
highest id and copies only what comes after. Only the `timestamp` column changes form, as zymi's
two schemas differ: TIMESTAMPTZ (microseconds) in Postgres, RFC 3339 text in SQLite; Postgres to
SQLite writes the event's own timestamp from its data, exactly what zymi's SQLite store writes.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import aiosqlite
import asyncpg
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from zymi_tui.events.envelope import parse_timestamp_ns
from zymi_tui.events.location import (
    POSTGRES_SCHEMES,
    PostgresStore,
    SqliteStore,
    StoreLocation,
    location_of,
    redact_url,
)
from zymi_tui.events.postgres import (
    PostgresReader,
    column_time,
    connect_pool,
    ensure_schema,
    explain_pg_error,
    sqlite_column_time,
)
from zymi_tui.events.sqlite import SqliteReader, SqliteWriter, explain_sqlite_error
from zymi_tui.project.locate import DEFAULT_DB, locate_store, project_store
from zymi_tui.project.reader import is_project

from .common import EXIT_OK, CommandError, err, out, run_async, warn

COLUMNS = (
    "id", "event_id", "stream_id", "sequence", "timestamp", "kind_tag", "data",
    "correlation_id", "causation_id", "source", "prev_hash", "hash",
)  # fmt: skip
TS, DATA = COLUMNS.index("timestamp"), COLUMNS.index("data")
BATCH = 2000

Row = tuple[Any, ...]
Head = tuple[str, int, str]


class Source(Protocol):
    label: str

    async def max_id(self) -> int: ...
    async def count_upto(self, gid: int) -> int: ...
    async def event_id_at(self, gid: int) -> str | None: ...
    async def rows(self, after: int, upto: int, limit: int) -> list[Row]: ...
    async def heads(self) -> list[Head]: ...
    async def close(self) -> None: ...


class Target(Source, Protocol):
    async def insert(self, rows: Sequence[Row]) -> None: ...
    async def last_link(self, stream_id: str) -> tuple[int, str] | None: ...
    async def has_link(self, stream_id: str, sequence: int, digest: str) -> bool: ...
    async def put_heads(self, heads: Sequence[Head]) -> None: ...


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
        conn = await aiosqlite.connect(Path(path).expanduser().resolve().as_uri() + "?mode=ro", uri=True)
        await conn.execute("PRAGMA busy_timeout=5000")
        cols = {r[1] for r in await conn.execute_fetchall("PRAGMA table_info(events)")}
        tables = {r[0] for r in await conn.execute_fetchall("SELECT name FROM sqlite_master WHERE type='table'")}
        return cls(Path(path), conn, {"prev_hash", "hash"} <= cols, "stream_heads" in tables)

    @classmethod
    async def target(cls, path: str) -> SqliteRows:
        await (await SqliteWriter.open(path)).close()  # zymi's DDL, WAL and hash columns
        conn = await aiosqlite.connect(str(Path(path).expanduser()), isolation_level=None)
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

    async def insert(self, rows: Sequence[Row]) -> None:
        marks = ", ".join("?" * len(COLUMNS))
        values = [_for_sqlite(r) for r in rows]
        try:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                await self._conn.executemany(f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({marks})", values)
                await self._conn.execute("COMMIT")
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise explain_sqlite_error(self.label, e) from None

    async def last_link(self, stream_id: str) -> tuple[int, str] | None:
        rows = await self._all(
            "SELECT sequence, hash FROM events WHERE stream_id = ? ORDER BY sequence DESC LIMIT 1", (stream_id,)
        )
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    async def has_link(self, stream_id: str, sequence: int, digest: str) -> bool:
        sql = "SELECT 1 FROM events WHERE stream_id = ? AND sequence = ? AND hash = ?"
        return bool(await self._all(sql, (stream_id, sequence, digest)))

    async def put_heads(self, heads: Sequence[Head]) -> None:
        try:
            await self._conn.execute("BEGIN IMMEDIATE")
            await self._conn.executemany(
                "INSERT INTO stream_heads (stream_id, last_sequence, last_hash) VALUES (?, ?, ?) "
                "ON CONFLICT(stream_id) DO UPDATE SET last_sequence = excluded.last_sequence, "
                "last_hash = excluded.last_hash",
                heads,
            )
            await self._conn.execute("COMMIT")
        except sqlite3.Error as e:
            raise explain_sqlite_error(self.label, e) from None

    async def close(self) -> None:
        await self._conn.close()


class PostgresRows:
    """A Postgres store as a copy source (read-only, up to its settled horizon) or target."""

    def __init__(self, url: str, pool: asyncpg.Pool, reader: PostgresReader | None = None) -> None:
        self.url = url
        self.label = redact_url(url)
        self._pool = pool
        self._reader = reader

    @classmethod
    async def source(cls, url: str) -> PostgresRows:
        reader = await PostgresReader.open(url)  # validates the store; its horizon bounds the copy
        return cls(url, await connect_pool(url, read_only=True, max_size=1), reader)

    @classmethod
    async def target(cls, url: str) -> PostgresRows:
        pool = await connect_pool(url, read_only=False, max_size=1)
        try:
            async with pool.acquire() as conn:
                await ensure_schema(conn)
        except asyncpg.PostgresError as e:
            await pool.close()
            raise explain_pg_error(url, e) from None
        return cls(url, pool)

    async def _all(self, sql: str, *params: Any) -> list[Any]:
        try:
            return list(await self._pool.fetch(sql, *params))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
            raise explain_pg_error(self.url, e) from None

    async def max_id(self) -> int:
        if self._reader is not None:  # a source: only ids no in-flight transaction can still fill
            return await self._reader.horizon()
        return int((await self._all("SELECT COALESCE(MAX(id), 0) FROM events"))[0][0])

    async def count_upto(self, gid: int) -> int:
        return int((await self._all("SELECT COUNT(*) FROM events WHERE id <= $1", gid))[0][0])

    async def event_id_at(self, gid: int) -> str | None:
        rows = await self._all("SELECT event_id FROM events WHERE id = $1", gid)
        return str(rows[0][0]) if rows else None

    async def rows(self, after: int, upto: int, limit: int) -> list[Row]:
        sql = f"SELECT {', '.join(COLUMNS)} FROM events WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3"
        return [tuple(r) for r in await self._all(sql, after, upto, limit)]

    async def heads(self) -> list[Head]:
        rows = await self._all("SELECT stream_id, last_sequence, last_hash FROM stream_heads ORDER BY stream_id")
        return [(s, int(q), h) for s, q, h in rows]

    async def insert(self, rows: Sequence[Row]) -> None:
        records = [_for_postgres(r) for r in rows]
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                await conn.copy_records_to_table("events", records=records, columns=list(COLUMNS))
                # explicit ids do not move the BIGSERIAL sequence: move it, or the next append collides
                await conn.execute(
                    "SELECT setval(pg_get_serial_sequence('events', 'id'), (SELECT MAX(id) FROM events))"
                )
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
            raise explain_pg_error(self.url, e) from None

    async def last_link(self, stream_id: str) -> tuple[int, str] | None:
        rows = await self._all(
            "SELECT sequence, hash FROM events WHERE stream_id = $1 ORDER BY sequence DESC LIMIT 1", stream_id
        )
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    async def has_link(self, stream_id: str, sequence: int, digest: str) -> bool:
        sql = "SELECT 1 FROM events WHERE stream_id = $1 AND sequence = $2 AND hash = $3"
        return bool(await self._all(sql, stream_id, sequence, digest))

    async def put_heads(self, heads: Sequence[Head]) -> None:
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                await conn.executemany(
                    "INSERT INTO stream_heads (stream_id, last_sequence, last_hash) VALUES ($1, $2, $3) "
                    "ON CONFLICT (stream_id) DO UPDATE SET last_sequence = EXCLUDED.last_sequence, "
                    "last_hash = EXCLUDED.last_hash",
                    heads,
                )
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
            raise explain_pg_error(self.url, e) from None

    async def close(self) -> None:
        await self._pool.close()
        if self._reader is not None:
            await self._reader.close()


def _for_postgres(row: Row) -> Row:
    ts = row[TS]
    if not isinstance(ts, datetime):
        try:
            ts = column_time(parse_timestamp_ns(str(ts)))
        except ValueError:
            raise CommandError(f"row {row[0]}: timestamp {ts!r} is not an RFC 3339 time") from None
    return (*row[:TS], ts, *row[TS + 1 :])


def _for_sqlite(row: Row) -> Row:
    ts = row[TS]
    if isinstance(ts, datetime):
        ts = sqlite_column_time(row[DATA], ts)
    return (*row[:TS], ts, *row[TS + 1 :])


async def _open(location: StoreLocation, *, target: bool) -> Source | Target:
    if isinstance(location, PostgresStore):
        return await (PostgresRows.target(location.url) if target else PostgresRows.source(location.url))
    return await (SqliteRows.target(str(location.path)) if target else SqliteRows.source(str(location.path)))


def _target_location(dst: str) -> StoreLocation:
    path = Path(dst).expanduser()
    if not dst.startswith(POSTGRES_SCHEMES) and path.is_dir() and is_project(path):
        return project_store(path)  # a project folder: the store its project.yml names, or .zymi/events.db
    if not dst.startswith(POSTGRES_SCHEMES) and path.is_dir():
        return SqliteStore(path / DEFAULT_DB)
    return location_of(dst)


async def _resume_point(src: Source, dst: Target) -> int:
    """The target's highest id, after checking that it holds exactly the source's rows up to it."""
    top = await dst.max_id()
    if top == 0:
        return 0
    theirs, ours = await src.event_id_at(top), await dst.event_id_at(top)
    if theirs != ours or await src.count_upto(top) != await dst.count_upto(top):
        raise CommandError(
            f"{dst.label} already holds events that are not a copy of {src.label} "
            f"(row {top} differs, or the row counts up to it do): migrate into an empty store"
        )
    return top


async def _heads(src: Source, dst: Target) -> tuple[list[Head], int]:
    """Source heads, as they are when their row was copied; for a stream the source appended to
    during the copy, the last copied link of that stream (so the target verifies)."""
    heads, moved = [], 0
    for stream_id, seq, digest in await src.heads():
        if await dst.has_link(stream_id, seq, digest):
            heads.append((stream_id, seq, digest))
        elif (link := await dst.last_link(stream_id)) is not None:
            heads.append((stream_id, *link))
            moved += 1
    return heads, moved


async def migrate(src_arg: str, dst_arg: str, batch: int) -> int:
    src_loc = locate_store(src_arg)
    dst_loc = _target_location(dst_arg)
    if src_loc.same_as(dst_loc):
        raise CommandError(f"SRC and DST are the same store ({src_loc})")
    src = await _open(src_loc, target=False)
    try:
        dst = await _open(dst_loc, target=True)
        assert isinstance(dst, SqliteRows | PostgresRows)
        try:
            return await _copy(src, dst, batch)
        finally:
            await dst.close()
    finally:
        await src.close()


async def _copy(src: Source, dst: Target, batch: int) -> int:
    cursor = await _resume_point(src, dst)
    already = await dst.count_upto(cursor) if cursor else 0
    upto = await src.max_id()
    todo = await src.count_upto(upto) - await src.count_upto(cursor)
    copied = 0
    columns = (TextColumn("[bold]migrate[/]"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task("events", total=max(todo, 0))
        while True:
            rows = await src.rows(cursor, upto, batch)
            if not rows:
                break
            await dst.insert(rows)
            cursor = int(rows[-1][0])
            copied += len(rows)
            progress.update(task, advance=len(rows))
    heads, moved = await _heads(src, dst)
    await dst.put_heads(heads)
    if moved:
        warn(f"{moved} stream(s) grew in {src.label} during the copy: run migrate again to copy the rest")
    there = f" ({already} were already there)" if already else ""
    out.print(f"Copied {copied} event(s){there} and {len(heads)} stream head(s) from {src.label} to {dst.label}.")
    return EXIT_OK


def configure(command: str, p: argparse.ArgumentParser) -> None:
    p.description = (
        "Copy every event of SRC into DST with its id, sequence, data and hashes untouched, "
        "then the stream heads, so `verify` passes on DST. DST is a .db file (created with zymi's schema) "
        "or a postgres:// URL (tables created if missing). Re-running copies only what is not there yet."
    )
    p.add_argument("src", metavar="SRC", help="a .db file, a project folder, or a postgres:// URL")
    p.add_argument("dst", metavar="DST", help="a .db file (created if missing) or a postgres:// URL")
    p.add_argument("--batch", type=int, default=BATCH, help=f"rows per transaction (default {BATCH})")

    def run(args: argparse.Namespace) -> int:
        if args.batch < 1:
            raise CommandError(f"--batch must be at least 1, got {args.batch}")
        try:
            return run_async(migrate(args.src, args.dst, args.batch))
        except KeyboardInterrupt:
            err.print("interrupted: what was copied is kept; run the same command again to resume")
            raise

    p.set_defaults(func=run)
