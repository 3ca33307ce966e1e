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
from zymi_tui.events.sqlite_inline import InlineConnection, ReadConnection
from zymi_tui.events.sqlite_runs import _ROW, _STREAMS_IN_RANGE, ID_BATCH, RunReads
from zymi_tui.events.sqlite_schema import LOCK_WAIT_S, explain_sqlite_error, is_locked
from zymi_tui.events.store import (
    Closable,
    KindRow,
    KindRowPage,
    Page,
    RawRow,
    RowPage,
    StoreError,
    StreamInfo,
    Utf8Row,
    step_range,
)
from zymi_tui.events.stored import BadRow, RowDecoder, StoredEvent
from zymi_tui.text_safety import escape_controls, has_undecodable_bytes

if TYPE_CHECKING:
    import asyncio
    from contextlib import AbstractContextManager


READ_BUSY_MS = 200  # one statement's wait for a lock; `_fetch` retries up to LOCK_WAIT_S in all

_UTF8_ROW = "SELECT id, stream_id, sequence, CAST(data AS BLOB) FROM events"  # `data` as its bytes
MAX_UNION = 400  # streams merged in one statement by `newest` (SQLite allows 500 SELECTs in a compound)
# a run stream's and its step streams' lowest id and number of rows, from the (stream_id, sequence) index alone
_RUN_SPAN = (
    "SELECT min(f), sum(n) FROM (SELECT min(id) AS f, count(*) AS n FROM events WHERE stream_id = CAST(? AS TEXT) "
    "UNION ALL SELECT min(id), count(*) FROM events WHERE stream_id >= CAST(? AS TEXT) AND stream_id < CAST(? AS TEXT))"
)
_KIND_ROWS_AFTER = "SELECT count(*) FROM (SELECT 1 FROM events WHERE kind_tag = ? AND id > ? LIMIT ?)"  # (kind index)
# a row of a run stream or of one of its steps, tested on each row the kind index gives (`+`: no stream index)
_IN_RUN = "(+stream_id = CAST(? AS TEXT) OR (+stream_id >= CAST(? AS TEXT) AND +stream_id < CAST(? AS TEXT)))"


def _bind(text: str) -> str | bytes:
    """A text query parameter (`_fetch` passes each through here): text that came from undecodable
    bytes goes back as those bytes. SQLite compares a BLOB with TEXT as never equal, so SQL that may
    receive such a stream id writes `CAST(? AS TEXT)` (the index is still used)."""
    return text.encode("utf-8", "surrogateescape") if has_undecodable_bytes(text) else text


def _run_and_steps(where: str, select: str = _ROW) -> str:
    """Rows of a run stream and of its `<run>:step:*` sub-streams matching `where`, each half on the
    (stream_id, sequence) index: an OR of the two stream conditions makes SQLite scan the table, and
    the unary `+` in `where` keeps it from preferring the id or kind index."""
    return (
        f"{select} WHERE stream_id = CAST(? AS TEXT) AND {where} UNION ALL "
        f"{select} WHERE stream_id >= CAST(? AS TEXT) AND stream_id < CAST(? AS TEXT) AND {where}"
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


class SqliteReader(ChainReads, RunReads, RowDecoder, Closable):
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

    def rows_at(self, stream_id: str, sequences: Sequence[int]) -> list[RawRow]:
        """`BlockingRows`: on a connection of its own, opened as this reader's, when first asked."""
        if self._blocking is None:
            self._blocking = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
            self._blocking.execute(f"PRAGMA busy_timeout={READ_BUSY_MS}")
        out: list[RawRow] = []
        for i in range(0, len(sequences), ID_BATCH):
            batch = list(sequences[i : i + ID_BATCH])
            sql = f"{_ROW} WHERE stream_id = CAST(? AS TEXT) AND sequence IN ({','.join('?' * len(batch))})"
            try:
                out += self._sane(self._blocking.execute(sql, [_bind(stream_id), *batch]))
            except sqlite3.Error as e:
                if NOT_UTF8 not in str(e) or self._blocking.text_factory is TEXT_ANY:
                    raise explain_sqlite_error(self.label, e) from None
                self._blocking.text_factory = TEXT_ANY  # (as `_fetch` does)
                out += self._sane(self._blocking.execute(sql, [_bind(stream_id), *batch]))
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

    async def read_rows(
        self, after_global_id: int, limit: int, *, stream_id: str | None = None, tag: str | None = None
    ) -> RowPage:
        """Rows in global order as stored (not decoded): all, of one kind, and/or of a run and its steps."""
        rows = await self._select_rows(_ROW, after_global_id, limit, stream_id, tag)
        return RowPage(self._sane(rows), rows[-1][0] if rows else after_global_id, len(rows))

    async def read_utf8_rows(
        self, after_global_id: int, limit: int, *, stream_id: str | None = None, tag: str | None = None
    ) -> tuple[list[Utf8Row], int]:
        """`read_rows`' rows with each `data` as its bytes (a text's UTF-8, not checked) and no column
        checked (`raw_lines` checks them, or the caller reads the page again with `read_rows`); and the
        last global id read. (A BLOB `data` reads as its bytes, as `_sane` reads it.)"""
        rows = await self._select_rows(_UTF8_ROW, after_global_id, limit, stream_id, tag)
        return rows, rows[-1][0] if rows else after_global_id

    @property
    def uri(self) -> str:
        """How the store was opened (read-only, or an immutable snapshot): another connection opens it so."""
        return self._uri

    async def read_range(self, after_global_id: int, upto: int) -> RowPage:
        """`read_rows` of the ids in (after_global_id, upto]."""
        rows = await self._fetch(f"{_ROW} WHERE id > ? AND id <= ? ORDER BY id", (after_global_id, upto))
        return RowPage(self._sane(rows), upto, len(rows))

    async def _select_rows(
        self, select: str, after_global_id: int, limit: int, stream_id: str | None, tag: str | None
    ) -> list[Any]:
        if stream_id is not None and tag is not None:
            # the kind index from the run's first row when it holds fewer rows of that kind than the run holds
            # rows: a long run's few rows of one kind, not each of its rows looked up for its kind
            lo, hi = step_range(stream_id)
            first, size = (await self._fetch(_RUN_SPAN, (stream_id, lo, hi)))[0]
            if first is None:
                return []
            after = max(after_global_id, first - 1)
            if (await self._fetch(_KIND_ROWS_AFTER, (tag, after, size)))[0][0] < size:
                sql = f"{select} WHERE kind_tag = ? AND id > ? AND {_IN_RUN} ORDER BY id LIMIT ?"
                return await self._fetch(sql, (tag, after, stream_id, lo, hi, limit))
        if stream_id is not None:
            where = "+id > ?" + ("" if tag is None else " AND +kind_tag = ?")
            cond = (after_global_id,) if tag is None else (after_global_id, tag)
            lo, hi = step_range(stream_id)
            params = (stream_id, *cond, lo, hi, *cond, limit)
            return await self._fetch(_run_and_steps(where, select) + " ORDER BY id LIMIT ?", params)
        if tag is not None:
            sql = f"{select} WHERE kind_tag = ? AND id > ? ORDER BY id LIMIT ?"
            return await self._fetch(sql, (tag, after_global_id, limit))
        return await self._rows_after(after_global_id, limit, select)

    async def read_rows_before(self, before_global_id: int | None, limit: int, *, tag: str) -> RowPage:
        """Rows of one kind below a global id (None: from the newest), newest first, as stored: the kind
        index read backwards."""
        if before_global_id is None:
            rows = await self._fetch(f"{_ROW} WHERE kind_tag = ? ORDER BY id DESC LIMIT ?", (tag, limit))
        else:
            sql = f"{_ROW} WHERE kind_tag = ? AND id < ? ORDER BY id DESC LIMIT ?"
            rows = await self._fetch(sql, (tag, before_global_id, limit))
        return RowPage(self._sane(rows), rows[-1][0] if rows else (before_global_id or 0), len(rows))

    async def read_stream(
        self, stream_id: str, *, include_steps: bool = False, after_global_id: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        lim = -1 if limit is None else limit
        if include_steps:
            return self._decode((await self.read_rows(after_global_id, lim, stream_id=stream_id)).rows)
        else:
            sql = f"{_ROW} WHERE stream_id = CAST(? AS TEXT) AND id > ? ORDER BY sequence LIMIT ?"
            rows = await self._fetch(sql, (stream_id, after_global_id, lim))
        return self._decode(rows)

    async def newest(self, stream_id: str, n: int, *, include_steps: bool = False) -> list[StoredEvent]:
        """Ids first, from the (stream_id, sequence) index alone, then only those rows: the newest `n` of
        each stream (read backwards on the index), merged. Sorting the run's rows, or even all its ids,
        would cost in proportion to the run, not to `n`."""
        streams = [stream_id]
        if include_steps:
            lo, hi = step_range(stream_id)
            streams += [s for (s,) in await self._fetch(_STREAMS_IN_RANGE, (lo, hi, hi))]
        if len(streams) <= MAX_UNION:
            newest = (
                "SELECT * FROM (SELECT id FROM events WHERE stream_id = CAST(? AS TEXT) ORDER BY sequence DESC LIMIT ?)"
            )
            ids = f"SELECT id FROM ({' UNION ALL '.join([newest] * len(streams))}) ORDER BY id DESC LIMIT ?"
            params: list[Any] = [v for s in streams for v in (s, n)] + [n]
        else:  # a run of very many steps: all its ids, sorted
            lo, hi = step_range(stream_id)
            ids = (
                "SELECT id FROM events WHERE stream_id = CAST(? AS TEXT) UNION ALL SELECT id FROM events "
                "WHERE stream_id >= CAST(? AS TEXT) AND stream_id < CAST(? AS TEXT) ORDER BY id DESC LIMIT ?"
            )
            params = [stream_id, lo, hi, n]
        return self._decode(await self._fetch(f"{_ROW} WHERE id IN ({ids}) ORDER BY id", params))

    async def read_kinds(self, tags: list[str], after_global_id: int = 0) -> list[StoredEvent]:
        marks = ",".join("?" * len(tags))
        rows = await self._fetch(f"{_ROW} WHERE kind_tag IN ({marks}) AND id > ? ORDER BY id", (*tags, after_global_id))
        return self._decode(rows)

    async def read_kind_page(
        self, tag: str, *, stream_id: str | None, after_global_id: int, limit: int
    ) -> list[StoredEvent]:
        return self._decode((await self.read_rows(after_global_id, limit, stream_id=stream_id, tag=tag)).rows)

    async def read_kinds_rows(self, tags: Sequence[str], after_global_id: int, limit: int) -> KindRowPage:
        """One kind: on the kind index. Several: one pass over the table in id order, the other kinds
        skipped by SQLite (the unary `+` keeps it off the kind index: walking it for each of a dozen kinds
        and merging them in id order costs more than the rows it skips; `kind_tag` is stored before
        `data`, so a skipped row's text is not read)."""
        where = "kind_tag = ?" if len(tags) == 1 else f"+kind_tag IN ({','.join('?' * len(tags))})"
        sql = f"SELECT id, stream_id, sequence, kind_tag, data FROM events WHERE {where} AND id > ? ORDER BY id LIMIT ?"
        rows = await self._fetch(sql, (*tags, after_global_id, limit))
        return KindRowPage(self._sane_tagged(rows), rows[-1][0] if rows else after_global_id, len(rows))
