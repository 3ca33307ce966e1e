"""The filtered reads of the SQLite reader (sqlite_read.py): the rows a run and its steps hold, rows of some
kinds, of an id range, the newest of a run; each on the index that fits.

`FilteredReads` is a part of `SqliteReader`: it uses the reader's connection (`_fetch`), its page read ahead
(`_rows_after`) and its row checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from zymi_tui.events.sqlite_runs import _ROW, _STREAMS_IN_RANGE
from zymi_tui.events.store import KindRow, KindRowPage, RawRow, RowPage, Utf8Row, step_range
from zymi_tui.events.stored import StoredEvent

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


def _run_and_steps(where: str, select: str = _ROW) -> str:
    """Rows of a run stream and of its `<run>:step:*` sub-streams matching `where`, each half on the
    (stream_id, sequence) index: an OR of the two stream conditions makes SQLite scan the table, and
    the unary `+` in `where` keeps it from preferring the id or kind index."""
    return (
        f"{select} WHERE stream_id = CAST(? AS TEXT) AND {where} UNION ALL "
        f"{select} WHERE stream_id >= CAST(? AS TEXT) AND stream_id < CAST(? AS TEXT) AND {where}"
    )


class FilteredReads:
    """The reads of the rows a run, a kind or an id range picks (a part of `SqliteReader`)."""

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError  # (`SqliteReader._fetch`)

    async def _rows_after(self, after_global_id: int, limit: int, select: str = _ROW) -> list[Any]:
        raise NotImplementedError  # (`SqliteReader._rows_after`)

    def _sane(self, rows: Iterable[Any]) -> list[RawRow]:
        raise NotImplementedError  # (`SqliteReader._sane`)

    def _sane_tagged(self, rows: list[Any]) -> list[KindRow]:
        raise NotImplementedError  # (`SqliteReader._sane_tagged`)

    def _decode(self, rows: Iterable[Any]) -> list[StoredEvent]:
        raise NotImplementedError  # (`SqliteReader._decode`)

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
