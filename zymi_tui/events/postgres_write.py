"""The Postgres writer: appends exactly as zymi's `PostgresEventStore::append` (one transaction an event,
`pg_advisory_xact_lock` on the stream, `MAX(sequence)+1`, v2 hash, `stream_heads` upsert)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import asyncpg

from zymi_tui.events.atomic import Transactions
from zymi_tui.events.hashchain import hash_v2
from zymi_tui.events.location import redact_url
from zymi_tui.events.postgres_schema import column_time, explain_pg_error, schema_pool
from zymi_tui.events.store import BatchAppender
from zymi_tui.events.stored import StoredEvent

if TYPE_CHECKING:
    from zymi_tui.events.kinds import Event

WRITER_POOL = 4

_NEXT = """SELECT
        COALESCE(MAX(sequence), 0) + 1 AS next_seq,
        COALESCE(
            (SELECT hash FROM events WHERE stream_id = $1 ORDER BY sequence DESC LIMIT 1),
            ''
        ) AS prev_hash
    FROM events
    WHERE stream_id = $1"""
_INSERT = """INSERT INTO events
        (event_id, stream_id, sequence, timestamp, kind_tag, data,
         correlation_id, causation_id, source, prev_hash, hash)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    RETURNING id"""
_HEAD = """INSERT INTO stream_heads (stream_id, last_sequence, last_hash)
    VALUES ($1, $2, $3)
    ON CONFLICT (stream_id) DO UPDATE SET
        last_sequence = EXCLUDED.last_sequence,
        last_hash = EXCLUDED.last_hash"""


class PostgresWriter(BatchAppender):
    """Appends events exactly as zymi's `PostgresEventStore::append` does."""

    def __init__(self, url: str, pool: asyncpg.Pool) -> None:
        self.url = url
        self.label = redact_url(url)
        self._pool = pool
        self._transactions = Transactions()

    @classmethod
    async def open(cls, url: str) -> PostgresWriter:
        return cls(url, await schema_pool(url, max_size=WRITER_POOL))

    async def close(self) -> None:
        await self._transactions.finish()
        await self._pool.close()

    def append_now(self, event: Event) -> StoredEvent | None:
        """Never: every append waits on the server."""
        return None

    async def append_many(self, events: Sequence[Event]) -> list[StoredEvent]:
        """Append in one transaction (zymi appends one event per transaction; so does `append`).
        The transaction commits or rolls back even if the caller is cancelled meanwhile."""
        return await self._transactions.run(self._append_tx(events))

    async def _append_tx(self, events: Sequence[Event]) -> list[StoredEvent]:
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                return [await self._insert(conn, e) for e in events]
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
            raise explain_pg_error(self.url, e) from None

    async def _insert(self, conn: asyncpg.Connection, event: Event) -> StoredEvent:
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", event.stream_id)
        row = await conn.fetchrow(_NEXT, event.stream_id)
        seq, prev = int(row["next_seq"]), str(row["prev_hash"])
        data = event.to_json()
        digest = hash_v2(event.id, seq, data, prev)
        gid = await conn.fetchval(
            _INSERT,
            event.id, event.stream_id, seq, column_time(event.timestamp_ns), event.tag, data,
            event.correlation_id, event.causation_id, event.source, prev, digest,
        )  # fmt: skip
        await conn.execute(_HEAD, event.stream_id, seq, digest)
        return StoredEvent(int(gid), event.stored_as(seq), data)

    async def checkpoint(self) -> None:
        """Nothing to do: Postgres has no WAL file of ours to fold back (SQLite's PASSIVE checkpoint)."""
