"""The Postgres reader (asyncpg) of a store schema- and write-compatible with zymi-core 0.9.3
(events/store/postgres.rs); the writer is postgres_write.py, the schema and pools postgres_schema.py.

asyncpg rather than psycopg: it is already a dependency, it is asyncio-native like the rest of the
store (no thread pool), it has a connection pool built in, and its binary protocol plus COPY
support make bulk reads and `migrate` fast.

Reading runs on connections whose every transaction is read-only (`default_transaction_read_only`),
so a reader never creates, alters or locks anything a writer needs. Writing creates zymi's schema
if it is missing (the exact DDL) and appends exactly as zymi does: one transaction per event that
takes `pg_advisory_xact_lock(hashtextextended(stream_id, 0))`, then `COALESCE(MAX(sequence),0)+1`
and the stream's last hash, inserts the row with its v2 hash, and upserts `stream_heads`.

Cursor reads and tailing. With a BIGSERIAL id, a transaction that took id 10 may commit after one
that took id 11, so a reader that moved its cursor to 11 would never see 10. Every cursor read is
therefore bounded by a *settled horizon* H: the highest id such that every row with an id <= H that
will ever commit is already visible. How H is found (`PostgresReader.horizon`):

- if the ids between the last horizon and `MAX(id)` are all present, there is nothing in flight;
- otherwise the missing ids belong to transactions that called `nextval` before the newest visible
  row committed. Such a transaction is inside an `INSERT INTO events`, so it holds a
  RowExclusiveLock on `events` until it ends (`pg_locks` shows it to every role). We wait until
  every transaction holding that lock *after* we read `MAX(id)` has ended; ids of transactions
  that lock the table later come from later `nextval` calls, so they are all above `MAX(id)`.
- if a holder stays open longer than WRITER_WAIT_S, only the gap-free prefix is settled, and the
  next read tries again. A gap held open for more than GIVE_UP_S (a session left idle inside a
  transaction) is skipped so the tail keeps moving; its ids are re-read for LATE_WATCH_S and any
  row that does appear is delivered then (late, out of global order, but not lost).

Tail the primary: a hot standby's `pg_locks` does not show the primary's writers.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import asyncpg

from zymi_tui.events.hashchain import ChainRow, ChainScan
from zymi_tui.events.location import redact_url
from zymi_tui.events.postgres_schema import connect_pool, explain_pg_error, first_connection, schema_present
from zymi_tui.events.run_index import RunIndex
from zymi_tui.events.store import (
    Closable,
    IdRow,
    KindRowPage,
    Page,
    RawRow,
    RowPage,
    StoreError,
    StreamInfo,
    rows_from_events,
    scan_by_stream,
    step_range,
)
from zymi_tui.events.stored import BadRow, RowDecoder, StoredEvent

READER_POOL = 4
CONTIGUITY_SCAN = 50_000  # check "no id missing" by counting when the new range is at most this wide
PREFIX_SCAN = 100_000
WRITER_WAIT_S = 0.1
GIVE_UP_S = 30.0
LATE_WATCH_S = 600.0
LATE_MAX = 10_000

_ROW = "SELECT id, stream_id, sequence, data FROM events"
# Locks on `events` held by an INSERT (or UPDATE/DELETE) in another session of this database.
_WRITERS = """SELECT virtualtransaction FROM pg_locks
    WHERE locktype = 'relation' AND mode = 'RowExclusiveLock' AND granted
      AND relation = 'events'::regclass
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND pid <> pg_backend_pid()"""


_STEPS = '(stream_id = $1 OR (stream_id COLLATE "C" >= $2 AND stream_id COLLATE "C" < $3))'


class PostgresReader(RowDecoder, Closable):
    """A read-only view of a Postgres event store."""

    def __init__(self, url: str, pool: asyncpg.Pool) -> None:
        self.url = url
        self.label = redact_url(url)
        self.problems: list[BadRow] = []
        self._pool = pool
        self._seen_bad: set[int] = set()
        self._has_hash = True
        self._has_heads = True
        self._safe = 0  # settled horizon
        self._horizon_lock = asyncio.Lock()
        self._stalled: tuple[int, float] | None = None  # (first unsettled id, since)
        self._late: dict[int, float] = {}  # skipped ids still watched -> deadline

    @classmethod
    async def open(cls, url: str) -> PostgresReader:
        pool = await connect_pool(url, read_only=True, max_size=READER_POOL)
        reader = cls(url, pool)
        async with first_connection(pool, url) as conn:
            present = await schema_present(conn)
            if "events" not in present:
                raise StoreError(
                    f"{reader.label} has no `events` table: not a zymi event store "
                    "(nothing has been written there yet, or the URL names another database)"
                )
            cols = {r[0] for r in await conn.fetch(
                "SELECT attname FROM pg_attribute WHERE attrelid = 'events'::regclass "
                "AND attnum > 0 AND NOT attisdropped")}  # fmt: skip
        missing = {"id", "event_id", "stream_id", "sequence", "data"} - cols
        if missing:
            await pool.close()
            raise StoreError(f"{reader.label}: the `events` table lacks columns {sorted(missing)}: not a zymi store")
        reader._has_hash = {"hash", "prev_hash"} <= cols
        reader._has_heads = "stream_heads" in present
        return reader

    async def close(self) -> None:
        if self._blocking is not None:
            self._blocking.close()
            self._blocking = None
        await self._pool.close()

    _blocking: _BlockingPool | None = None

    def rows_at(self, stream_id: str, sequences: Sequence[int]) -> list[RawRow]:
        """`BlockingRows`: on a connection of its own, served by a thread's event loop (this reader's
        pool belongs to the caller's loop, which is blocked while it waits), started when first asked."""
        if self._blocking is None:
            self._blocking = _BlockingPool(self.url)
        sql = f"{_ROW} WHERE stream_id = $1 AND sequence = ANY($2::bigint[])"
        rows = self._blocking.run(lambda pool: pool.fetch(sql, stream_id, list(sequences)))
        return [(int(gid), str(s), int(seq), str(data)) for gid, s, seq, data in rows]

    async def _fetch(self, sql: str, *params: Any) -> list[Any]:
        try:
            return list(await self._pool.fetch(sql, *params))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
            raise explain_pg_error(self.url, e) from None

    async def _value(self, sql: str, *params: Any) -> Any:
        rows = await self._fetch(sql, *params)
        return rows[0][0]

    def _decode(self, rows: Iterable[Any]) -> list[StoredEvent]:
        return self._decode_rows(rows)

    # -- the settled horizon -------------------------------------------------------------------

    async def horizon(self) -> int:
        """The highest id H such that every row with id <= H that will ever commit is visible now."""
        async with self._horizon_lock:
            top = int(await self._value("SELECT COALESCE(MAX(id), 0) FROM events"))
            if top <= self._safe:
                return self._safe
            if top - self._safe <= CONTIGUITY_SCAN:
                present = await self._value("SELECT COUNT(*) FROM events WHERE id > $1 AND id <= $2", self._safe, top)
                if present == top - self._safe:
                    self._safe, self._stalled = top, None
                    return top
            if await self._writers_finish():
                self._safe, self._stalled = top, None
                return top
            await self._settle_prefix(top)
            return self._safe

    async def _writers_finish(self) -> bool:
        """Wait (up to WRITER_WAIT_S) for the transactions writing to `events` now to end."""
        open_now = [r[0] for r in await self._fetch(_WRITERS)]
        deadline = time.monotonic() + WRITER_WAIT_S
        while open_now:
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.002)
            rows = await self._fetch(f"{_WRITERS} AND virtualtransaction = ANY($1::text[])", open_now)
            open_now = [r[0] for r in rows]
        return True

    async def _settle_prefix(self, top: int) -> None:
        """A writer is still open: settle the ids up to the first gap; skip a gap held too long."""
        ids = [r[0] for r in await self._fetch(
            "SELECT id FROM events WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3", self._safe, top, PREFIX_SCAN
        )]  # fmt: skip
        prefix = self._safe
        for gid in ids:
            if gid != prefix + 1:
                break
            prefix = gid
        if len(ids) == PREFIX_SCAN and prefix == ids[-1]:
            self._safe = prefix  # no gap in this slice; the rest is settled on the next read
            return
        now = time.monotonic()
        gap = prefix + 1
        if self._stalled is None or self._stalled[0] != gap:
            self._stalled = (gap, now)
            self._safe = prefix
            return
        if now - self._stalled[1] < GIVE_UP_S:
            self._safe = prefix
            return
        present = set(ids)
        for gid in range(gap, min(top, gap + LATE_MAX)):
            if gid not in present:
                self._late[gid] = now + LATE_WATCH_S
        self._safe, self._stalled = top, None

    async def _late_rows(self, after_global_id: int) -> list[Any]:
        """Skipped ids that have appeared since, at or below the cursor (the page itself has the rest)."""
        now = time.monotonic()
        self._late = {gid: t for gid, t in self._late.items() if t > now}
        if not self._late:
            return []
        rows = await self._fetch(f"{_ROW} WHERE id = ANY($1::bigint[]) ORDER BY id", list(self._late))
        for r in rows:
            del self._late[r[0]]
        return [r for r in rows if r[0] <= after_global_id]

    # -- the EventReader protocol --------------------------------------------------------------

    async def count(self) -> int:
        return int(await self._value("SELECT COUNT(*) FROM events"))

    async def max_global_id(self) -> int:
        """The settled horizon: every event committed after this returns has a higher id."""
        return await self.horizon()

    async def streams(self) -> list[StreamInfo]:
        rows = await self._fetch(
            "SELECT stream_id, COUNT(*), MIN(id), MAX(id) FROM events GROUP BY stream_id ORDER BY stream_id"
        )
        return [StreamInfo(s, int(n), int(lo), int(hi)) for s, n, lo, hi in rows]

    async def read_after(self, after_global_id: int, limit: int) -> Page:
        late = await self._late_rows(after_global_id) if self._late else []
        top = await self.horizon()
        rows = await self._fetch(f"{_ROW} WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3", after_global_id, top, limit)
        last = rows[-1][0] if len(rows) == limit else max(top, after_global_id)
        return Page(self._decode([*late, *rows]), last, len(rows))

    async def read_stream(
        self, stream_id: str, *, include_steps: bool = False, after_global_id: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        top = await self.horizon()
        if include_steps:
            lo, hi = step_range(stream_id)
            sql = f"{_ROW} WHERE {_STEPS} AND id > $4 AND id <= $5 ORDER BY id LIMIT $6"
            rows = await self._fetch(sql, stream_id, lo, hi, after_global_id, top, limit)
        else:
            sql = f"{_ROW} WHERE stream_id = $1 AND id > $2 AND id <= $3 ORDER BY sequence LIMIT $4"
            rows = await self._fetch(sql, stream_id, after_global_id, top, limit)
        return self._decode(rows)

    async def newest(self, stream_id: str, n: int, *, include_steps: bool = False) -> list[StoredEvent]:
        top = await self.horizon()
        # ids first (index only), then those rows: the run's data is never sorted
        if include_steps:
            lo, hi = step_range(stream_id)
            ids = f"SELECT id FROM events WHERE {_STEPS} AND id <= $4 ORDER BY id DESC LIMIT $5"
            rows = await self._fetch(f"{_ROW} WHERE id IN ({ids}) ORDER BY id", stream_id, lo, hi, top, n)
        else:
            ids = "SELECT id FROM events WHERE stream_id = $1 AND id <= $2 ORDER BY sequence DESC LIMIT $3"
            rows = await self._fetch(f"{_ROW} WHERE id IN ({ids}) ORDER BY id", stream_id, top, n)
        return self._decode(rows)

    async def read_kinds(self, tags: list[str], after_global_id: int = 0) -> list[StoredEvent]:
        top = await self.horizon()
        rows = await self._fetch(
            f"{_ROW} WHERE kind_tag = ANY($1::text[]) AND id > $2 AND id <= $3 ORDER BY id",
            tags, after_global_id, top,
        )  # fmt: skip
        return self._decode(rows)

    async def run_ids(self, stream_id: str) -> list[IdRow]:
        top = await self.horizon()
        lo, hi = step_range(stream_id)
        rows = await self._fetch(
            f"SELECT id, stream_id, sequence FROM events WHERE {_STEPS} AND id <= $4 ORDER BY id",
            stream_id,
            lo,
            hi,
            top,
        )
        return [(int(gid), str(s), int(seq)) for gid, s, seq in rows]

    async def run_index(self, stream_id: str) -> RunIndex:
        return RunIndex.from_ids(await self.run_ids(stream_id))

    async def kinds_of(self, ids: list[int]) -> dict[int, str]:
        top = await self.horizon()
        rows = await self._fetch("SELECT id, kind_tag FROM events WHERE id = ANY($1::bigint[]) AND id <= $2", ids, top)
        return {int(gid): str(tag) for gid, tag in rows}

    async def read_ids(self, ids: list[int]) -> list[StoredEvent]:
        return self._decode(await self.read_id_rows(ids))

    async def read_id_rows(self, ids: list[int]) -> list[RawRow]:
        top = await self.horizon()
        rows = await self._fetch(f"{_ROW} WHERE id = ANY($1::bigint[]) AND id <= $2 ORDER BY id", ids, top)
        return [(int(gid), str(s), int(seq), str(data)) for gid, s, seq, data in rows]

    async def read_kind_page(
        self, tag: str, *, stream_id: str | None, after_global_id: int, limit: int
    ) -> list[StoredEvent]:
        top = await self.horizon()
        if stream_id is None:
            rows = await self._fetch(
                f"{_ROW} WHERE kind_tag = $1 AND id > $2 AND id <= $3 ORDER BY id LIMIT $4",
                tag, after_global_id, top, limit,
            )  # fmt: skip
        else:
            lo, hi = step_range(stream_id)
            rows = await self._fetch(
                f"{_ROW} WHERE {_STEPS} AND kind_tag = $4 AND id > $5 AND id <= $6 ORDER BY id LIMIT $7",
                stream_id, lo, hi, tag, after_global_id, top, limit,
            )  # fmt: skip
        return self._decode(rows)

    async def read_rows(
        self, after_global_id: int, limit: int, *, stream_id: str | None = None, tag: str | None = None
    ) -> RowPage:
        return await rows_from_events(self, after_global_id, limit, stream_id=stream_id, tag=tag)

    async def read_rows_before(self, before_global_id: int | None, limit: int, *, tag: str) -> RowPage:
        """Below the settled horizon (None: from it down), newest first, on the kind index."""
        top = await self.horizon() + 1
        if before_global_id is not None:
            top = min(top, before_global_id)
        rows = await self._fetch(
            f"{_ROW} WHERE kind_tag = $1 AND id < $2 ORDER BY id DESC LIMIT $3", tag, top, limit
        )  # fmt: skip
        out = [(int(gid), str(s), int(seq), str(data)) for gid, s, seq, data in rows]
        return RowPage(out, out[-1][0] if out else top, len(out))

    async def read_kinds_rows(self, tags: Sequence[str], after_global_id: int, limit: int) -> KindRowPage:
        """Up to the settled horizon, like every cursor read (the planner picks the kind index or a scan)."""
        top = await self.horizon()
        rows = await self._fetch(
            "SELECT id, stream_id, sequence, kind_tag, data FROM events "
            "WHERE kind_tag = ANY($1::text[]) AND id > $2 AND id <= $3 ORDER BY id LIMIT $4",
            list(tags), after_global_id, top, limit,
        )  # fmt: skip
        out = [(int(gid), str(s), int(seq), str(tag), str(data)) for gid, s, seq, tag, data in rows]
        return KindRowPage(out, out[-1][0] if out else after_global_id, len(out))

    async def scan_chains(self, heads: Mapping[str, tuple[int, str]], *, thorough: bool = False) -> ChainScan:
        return await scan_by_stream(self, heads)  # rows commit out of id order here: each stream is read whole

    async def chain_rows(self, stream_id: str) -> list[ChainRow]:
        cols = "prev_hash, hash" if self._has_hash else "'', ''"
        rows = await self._fetch(
            f"SELECT id, event_id, sequence, data, {cols} FROM events WHERE stream_id = $1 ORDER BY sequence",
            stream_id,
        )
        return [ChainRow(*r) for r in rows]

    async def heads_stamp(self) -> tuple[int, int] | None:
        return None

    async def stream_heads(self) -> dict[str, tuple[int, str]]:
        if not self._has_heads:
            return {}
        rows = await self._fetch("SELECT stream_id, last_sequence, last_hash FROM stream_heads")
        return {s: (int(seq), h) for s, seq, h in rows}


class _BlockingPool:
    """A one-connection read-only pool on an event loop of its own thread, for blocking reads."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="zymi-tui-rows-at", daemon=True)
        self._thread.start()
        self._pool: asyncpg.Pool = self._call(connect_pool(url, read_only=True, max_size=1))

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def run(self, query: Any) -> list[Any]:
        try:
            return list(self._call(query(self._pool)))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as e:
            raise explain_pg_error(self.url, e) from None

    def close(self) -> None:
        try:
            self._call(self._pool.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()
