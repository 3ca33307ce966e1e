"""Postgres rows as stored: a store as a copy source (read-only, up to its settled horizon) or target."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from zymi_tui.events.location import redact_url
from zymi_tui.events.postgres_read import PostgresReader
from zymi_tui.events.postgres_schema import column_time, connect_pool, explain_pg_error, schema_pool
from zymi_tui.events.store import StoreError
from zymi_tui.events.timestamps import parse_timestamp_ns
from zymi_tui.events.whole_rows import COLUMNS, COPY_MARK, TS, CopyInProgress, Head, Row


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
        return cls(url, await schema_pool(url, max_size=1))

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

    async def begin_copy(self, source: str, source_upto: int) -> None:
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                await conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {COPY_MARK} (source TEXT NOT NULL, source_upto BIGINT NOT NULL)"
                )
                await conn.execute(f"DELETE FROM {COPY_MARK}")
                await conn.execute(f"INSERT INTO {COPY_MARK} VALUES ($1, $2)", source, source_upto)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
            raise explain_pg_error(self.url, e) from None

    async def copy_in_progress(self) -> CopyInProgress | None:
        """This store's COPY_MARK (None when it has none)."""
        if not (await self._all("SELECT to_regclass($1) IS NOT NULL", COPY_MARK))[0][0]:
            return None
        marks = await self._all(f"SELECT source, source_upto FROM {COPY_MARK} LIMIT 1")
        top = int((await self._all("SELECT COALESCE(MAX(id), 0) FROM events"))[0][0])
        source, upto = (marks[0][0], marks[0][1]) if marks else ("?", 0)
        return CopyInProgress(str(source), int(upto), top)

    async def insert(self, rows: Sequence[Row]) -> None:
        records = [for_postgres(r) for r in rows]
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

    async def finish_copy(self, heads: Sequence[Head]) -> None:
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                await conn.executemany(
                    "INSERT INTO stream_heads (stream_id, last_sequence, last_hash) VALUES ($1, $2, $3) "
                    "ON CONFLICT (stream_id) DO UPDATE SET last_sequence = EXCLUDED.last_sequence, "
                    "last_hash = EXCLUDED.last_hash",
                    heads,
                )
                await conn.execute(f"DROP TABLE IF EXISTS {COPY_MARK}")
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
            raise explain_pg_error(self.url, e) from None

    async def close(self) -> None:
        await self._pool.close()
        if self._reader is not None:
            await self._reader.close()


def for_postgres(row: Row) -> Row:
    ts = row[TS]
    if not isinstance(ts, datetime):
        try:
            ts = column_time(parse_timestamp_ns(str(ts)))
        except ValueError:
            raise StoreError(f"row {row[0]}: timestamp {ts!r} is not an RFC 3339 time") from None
    return (*row[:TS], ts, *row[TS + 1 :])
