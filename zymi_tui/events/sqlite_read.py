"""The SQLite reader (aiosqlite) of a store byte-compatible with zymi-core 0.9.3 (docs/engine.md#sqlite-store).

Reading opens the file with `mode=ro`: no DDL, no journal-mode switch, no write of any kind
(zymi's own readers create their schema and switch the file to WAL). Every read is one short
statement, so a concurrent writer never waits on us. The writer is sqlite_write.py, zymi's schema
sqlite_schema.py.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zymi_tui.events.hashchain import column_text
from zymi_tui.events.sqlite_chains import ChainReads
from zymi_tui.events.sqlite_check import NOT_UTF8, TEXT_ANY
from zymi_tui.events.sqlite_connect import connect
from zymi_tui.events.sqlite_file import check_store_file, is_wal, note_store
from zymi_tui.events.sqlite_filtered import FilteredReads
from zymi_tui.events.sqlite_inline import InlineConnection, ReadConnection
from zymi_tui.events.sqlite_runs import _ROW, ID_BATCH, RunReads
from zymi_tui.events.sqlite_schema import LOCK_WAIT_S, explain_sqlite_error, is_locked
from zymi_tui.events.store import (
    Closable,
    KindRow,
    Page,
    RawRow,
    StoreError,
    StreamInfo,
)
from zymi_tui.events.stored import BadRow, RowDecoder, StoredEvent
from zymi_tui.text_safety import escape_controls, has_undecodable_bytes

if TYPE_CHECKING:
    import asyncio
    from contextlib import AbstractContextManager


READ_BUSY_MS = 200  # one statement's wait for a lock; `_fetch` retries up to LOCK_WAIT_S in all


def _bind(text: str) -> str | bytes:
    """A text query parameter (`_fetch` passes each through here): text that came from undecodable
    bytes goes back as those bytes. SQLite compares a BLOB with TEXT as never equal, so SQL that may
    receive such a stream id writes `CAST(? AS TEXT)` (the index is still used)."""
    return text.encode("utf-8", "surrogateescape") if has_undecodable_bytes(text) else text


_STREAM_END = "SELECT MAX(id) FROM events WHERE stream_id = CAST(? AS TEXT) AND id <= ?"
# each stream's first and last id, and the name of a long one (or one held as a BLOB: `streams` lists its
# BLOB rows after its TEXT rows, and `stream_ends` keeps the BLOB rows' end)
_NAMED = "COUNT(*) >= ?1 OR typeof(stream_id) = 'blob'"
_SPANS = (
    f"SELECT MIN(id), MAX(id), CASE WHEN {_NAMED} THEN stream_id END FROM events GROUP BY stream_id ORDER BY stream_id"
)
_NAMED_ENDS = (
    f"SELECT stream_id, MAX(id) FROM events WHERE id <= ?2 GROUP BY stream_id HAVING {_NAMED} ORDER BY stream_id"
)


def _drop(ahead: tuple[object, asyncio.Future[list[Any]]] | None) -> None:
    """Discard a read-ahead: cancel it, or consume its error so none is logged as never retrieved."""
    if ahead is None:
        return
    future = ahead[1]
    if not future.done():
        future.cancel()
    elif not future.cancelled():
        future.exception()


class SqliteReader(ChainReads, RunReads, FilteredReads, RowDecoder, Closable):
    """A read-only view of a SQLite event store."""

    def __init__(self, path: Path, uri: str, conn: ReadConnection, has_hash: bool) -> None:
        self.path = path
        self.label = str(path)
        self._uri = uri  # how `conn` was opened (read-only; immutable for a snapshot)
        self._conn = conn
        self._has_hash = has_hash
        self.problems: list[BadRow] = []
        self._seen_bad: set[int] = set()
        # True when read as an immutable snapshot (see `open`): a writer's later commits are not seen
        self.snapshot = False
        self._ahead: tuple[tuple[str, int, int], asyncio.Future[list[Any]]] | None = None
        # read in the caller's thread (`sqlite_inline`): no page read ahead, a lock waited for by sleeping
        self.inline = isinstance(conn, InlineConnection)

    @classmethod
    async def open(cls, path: str | Path, *, inline: bool = False) -> SqliteReader:
        """Open read-only. A WAL store in a folder we cannot write, with no `-wal` file (so no writer
        is active), cannot get its `-shm` index: it is then read as an immutable snapshot. `inline`:
        read in this thread, with no event loop (`sqlite_inline`)."""
        p = Path(path).expanduser()
        check_store_file(p)
        note_store(p)
        try:
            return await cls._open(p, immutable=False, inline=inline)
        except StoreError as e:
            # a read-only mount says "unable to open"; a folder without write permission, "readonly database"
            if not ("unable to open" in str(e) or "readonly database" in str(e)) or not is_wal(p):
                raise
            if Path(f"{p}-wal").exists():
                raise StoreError(
                    f"cannot open {p} read-only: it is a WAL store with a -wal file, and SQLite cannot create "
                    "its -shm index in that folder. Copy the store with its -wal file to a writable folder"
                ) from None
        reader = await cls._open(p, immutable=True, inline=inline)
        reader.snapshot = True
        return reader

    @classmethod
    async def _open(cls, p: Path, *, immutable: bool, inline: bool) -> SqliteReader:
        uri = p.resolve().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")
        try:
            conn: ReadConnection = await (InlineConnection.connect if inline else connect)(uri, uri=True)
        except sqlite3.Error as e:
            raise explain_sqlite_error(str(p), e) from None
        reader = cls(p, uri, conn, has_hash=False)
        try:
            await conn.execute_fetchall(f"PRAGMA busy_timeout={READ_BUSY_MS}")
            tables = {r[0] for r in await reader._fetch("SELECT name FROM sqlite_master WHERE type='table'")}
            if "events" not in tables:
                raise StoreError(
                    f"{p} is a SQLite database but has no `events` table: it is not a zymi event store. "
                    "Pass the .zymi/events.db that zymi writes, or its project folder"
                )
            cols = {r[1] for r in await reader._fetch("PRAGMA table_info(events)")}
            missing = {"id", "event_id", "stream_id", "sequence", "data"} - cols
            if missing:
                raise StoreError(f"{p}: the `events` table lacks columns {sorted(missing)}: not a zymi store")
            reader._has_hash = "hash" in cols and "prev_hash" in cols
            reader._has_heads = "stream_heads" in tables
        except BaseException:
            await conn.close()
            raise
        return reader

    _has_heads: bool = False

    async def close(self) -> None:
        _drop(self._ahead)
        self._ahead = None
        if self._blocking is not None:
            self._blocking.close()
            self._blocking = None
        await self._conn.close()

    _blocking: sqlite3.Connection | None = None

    def released(self) -> AbstractContextManager[None] | None:
        """Its connection closed in this context, then opened again (`InlineConnection.closed_meanwhile`,
        for a fork); None when it cannot be (read on a thread, or a second connection open)."""
        conn = self._conn
        if not isinstance(conn, InlineConnection) or self._blocking is not None or self._ahead is not None:
            return None
        return conn.closed_meanwhile()

    def _blocking_conn(self) -> sqlite3.Connection:
        """A connection of its own, opened as this reader's, when first asked."""
        if self._blocking is None:
            self._blocking = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
            self._blocking.execute(f"PRAGMA busy_timeout={READ_BUSY_MS}")
        return self._blocking

    def stream_end(self, stream_id: str, top: int) -> int | None:
        """`StreamEnds`: the last global id up to `top` of the rows holding `stream_id` as TEXT (those of a
        stream id held as a BLOB are named by `stream_spans`), blocking: on this reader's connection when
        it reads in this thread (no second connection, nor its page cache)."""
        params = (_bind(stream_id), top)
        conn = self._conn
        fetch = conn.fetchall_now if isinstance(conn, InlineConnection) else self._blocking_conn().execute
        (end,) = next(iter(fetch(_STREAM_END, params)))
        return None if end is None else int(end)

    def rows_at(self, stream_id: str, sequences: Sequence[int]) -> list[RawRow]:
        """`BlockingRows`: on a connection of its own, opened as this reader's, when first asked."""
        conn = self._blocking_conn()
        out: list[RawRow] = []
        for i in range(0, len(sequences), ID_BATCH):
            batch = list(sequences[i : i + ID_BATCH])
            sql = f"{_ROW} WHERE stream_id = CAST(? AS TEXT) AND sequence IN ({','.join('?' * len(batch))})"
            try:
                out += self._sane(conn.execute(sql, [_bind(stream_id), *batch]))
            except sqlite3.Error as e:
                if NOT_UTF8 not in str(e) or conn.text_factory is TEXT_ANY:
                    raise explain_sqlite_error(self.label, e) from None
                conn.text_factory = TEXT_ANY  # (as `_fetch` does)
                out += self._sane(conn.execute(sql, [_bind(stream_id), *batch]))
        return out

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """One short read; retries while a writer holds a lock (up to LOCK_WAIT_S), then explains."""
        deadline = time.monotonic() + LOCK_WAIT_S
        params = [_bind(p) if type(p) is str else p for p in params]
        while True:
            try:
                rows = await self._conn.execute_fetchall(sql, params)
                return rows if type(rows) is list else list(rows)  # (both connections give a list: not copied)
            except sqlite3.Error as e:
                if is_locked(e) and time.monotonic() < deadline:
                    if self.inline:
                        time.sleep(0.05)
                    else:
                        import asyncio

                        await asyncio.sleep(0.05)
                    continue
                if NOT_UTF8 in str(e) and self._conn.text_factory is not TEXT_ANY:
                    self._conn.text_factory = TEXT_ANY
                    continue
                raise explain_sqlite_error(self.label, e) from None

    def _sane(self, rows: Iterable[Any]) -> list[RawRow]:
        """The rows whose columns have the types zymi writes (a BLOB `data` read as the text its bytes
        hold); the others are reported in `problems` and left out. While SQLite decodes text itself (no
        undecodable text seen yet), a page whose columns all have zymi's types is taken as read."""
        if type(rows) is list and self._text_strict():
            typed = [r for r in rows if type(r[1]) is str and type(r[2]) is int and type(r[3]) is str]
            if len(typed) == len(rows):
                return typed
        out: list[RawRow] = []
        for gid, stream_id, seq, data in rows:
            if self._placed(gid, stream_id, seq):
                out.append((gid, stream_id, seq, data if type(data) is str else column_text(data)))
        return out

    def _sane_tagged(self, rows: list[Any]) -> list[KindRow]:
        """`_sane` of rows with their kind tag (a text equal to a tag asked for: not checked again).
        While SQLite decodes text itself (no undecodable text seen yet), a text column holds valid UTF-8:
        a page whose columns all have zymi's types is taken as read, the rows one by one only if not."""
        if self._text_strict():
            typed = [r for r in rows if type(r[1]) is str and type(r[2]) is int and type(r[4]) is str]
            if len(typed) == len(rows):
                return typed
        out: list[KindRow] = []
        for gid, stream_id, seq, tag, data in rows:
            if self._placed(gid, stream_id, seq):
                out.append((gid, stream_id, seq, tag, data if type(data) is str else column_text(data)))
        return out

    def _text_strict(self) -> bool:
        """Whether both connections still let SQLite decode text (so a str column is valid UTF-8)."""
        blocking = self._blocking
        return self._conn.text_factory is not TEXT_ANY and (blocking is None or blocking.text_factory is not TEXT_ANY)

    def _placed(self, gid: int, stream_id: Any, seq: Any) -> bool:
        """Whether a row's stream id is UTF-8 text and its sequence an integer (else it is reported)."""
        if type(stream_id) is not str or has_undecodable_bytes(stream_id):
            what = "is not valid UTF-8 text" if type(stream_id) is str else "is not text"
            self._bad(gid, escape_controls(column_text(stream_id)), seq, f"the stream_id column {what}")
            return False
        if type(seq) is not int:
            self._bad(gid, stream_id, seq, f"the sequence column is not an integer: {str(seq)[:40]!r}")
            return False
        return True

    def _decode(self, rows: Iterable[Any]) -> list[StoredEvent]:
        return self._decode_rows(self._sane(rows))

    async def count(self) -> int:
        return int((await self._fetch("SELECT COUNT(*) FROM events"))[0][0])

    async def max_global_id(self) -> int:
        return int((await self._fetch("SELECT COALESCE(MAX(id), 0) FROM events"))[0][0])

    async def streams(self) -> list[StreamInfo]:
        rows = await self._fetch(
            "SELECT stream_id, COUNT(*), MIN(id), MAX(id) FROM events GROUP BY stream_id ORDER BY stream_id"
        )
        return [StreamInfo(column_text(s), n, lo, hi) for s, n, lo, hi in rows]

    async def stream_spans(self, long_from: int) -> tuple[list[tuple[int, int]], dict[str, int]]:
        """Each stream's (first global id, last global id), as `streams` lists them, without their names
        but those of the streams of `long_from` events or more and of a stream id held as a BLOB, with
        their ends (as `stream_ends` keeps them: `named_ends`)."""
        rows = await self._fetch(_SPANS, (long_from,))
        return [(lo, hi) for lo, hi, _ in rows], {column_text(s): hi for _, hi, s in rows if s is not None}

    async def named_ends(self, long_from: int, top: int) -> dict[str, int]:
        """The last global id up to `top` of the streams of `long_from` events or more there, and of a
        stream id held as a BLOB (which `stream_end` does not read), as `stream_ends` keeps them."""
        return {column_text(s): hi for s, hi in await self._fetch(_NAMED_ENDS, (long_from, top))}

    async def closing_completions(self) -> list[int]:
        """`RunClosings`: each completion's later rows sought on the correlation index."""
        rows = await self._fetch(
            "SELECT c.id FROM events AS c WHERE c.kind_tag = 'pipeline_completed' AND c.correlation_id <> '' "
            "AND NOT EXISTS (SELECT 1 FROM events AS e WHERE e.correlation_id = c.correlation_id AND e.id > c.id) "
            "ORDER BY c.id"
        )
        return [gid for (gid,) in rows]

    async def _rows_after(self, after_global_id: int, limit: int, select: str = _ROW) -> list[Any]:
        """The next `limit` rows after a global id. After a full page the following one is fetched
        ahead (SQLite works in aiosqlite's thread while this one is decoded): a full scan's reads
        and decoding overlap. A read-ahead nobody asks for is dropped at the next different call."""
        ahead, self._ahead = self._ahead, None
        sql = f"{select} WHERE id > ? ORDER BY id LIMIT ?"
        if ahead is not None and ahead[0] == (sql, after_global_id, limit):
            rows = await ahead[1]
        else:
            _drop(ahead)
            rows = await self._fetch(sql, (after_global_id, limit))
        if len(rows) == limit and not self.inline:
            import asyncio

            key = (sql, rows[-1][0], limit)
            self._ahead = (key, asyncio.ensure_future(self._fetch(sql, key[1:])))
        return rows

    async def read_after(self, after_global_id: int, limit: int) -> Page:
        rows = await self._rows_after(after_global_id, limit)
        return Page(self._decode(rows), rows[-1][0] if rows else after_global_id, len(rows))

    @property
    def uri(self) -> str:
        """How the store was opened (read-only, or an immutable snapshot): another connection opens it so."""
        return self._uri
