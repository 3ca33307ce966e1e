"""The run-index side of the SQLite reader (sqlite_read.py): a run's ids and kinds from the indexes alone,
and rows by id.

`RunReads` is a part of `SqliteReader`: it uses the reader's connection (`_fetch`) and its row checks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from zymi_tui.events.hashchain import column_text
from zymi_tui.events.run_index import RunIndex
from zymi_tui.events.store import IdRow, RawRow, step_range
from zymi_tui.events.stored import StoredEvent

ID_BATCH = 500  # ids bound in one `IN (...)` (under SQLite's oldest limit of 999 variables)
ID_PAGE = 50_000  # `run_ids` reads a stream this many rows at a time
DENSE_SPAN = 2  # `kinds_of` reads the kind index over ids spanning less than this many times their number
_ROW = "SELECT id, stream_id, sequence, data FROM events"  # (the reader's row, sqlite_read.py's too)
# the distinct stream ids in [lo, hi), one index seek each (a loose index scan)
_STREAMS_IN_RANGE = """WITH RECURSIVE s(id) AS (
    SELECT (SELECT min(stream_id) FROM events WHERE stream_id >= CAST(?1 AS TEXT) AND stream_id < CAST(?2 AS TEXT))
    UNION ALL
    SELECT (SELECT min(stream_id) FROM events WHERE stream_id > s.id AND stream_id < CAST(?3 AS TEXT))
    FROM s WHERE s.id IS NOT NULL
) SELECT id FROM s WHERE id IS NOT NULL"""


class RunReads:
    """The reads of a run's index and of rows by id (a part of `SqliteReader`)."""

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError  # (`SqliteReader._fetch`)

    def _sane(self, rows: Iterable[Any]) -> list[RawRow]:
        raise NotImplementedError  # (`SqliteReader._sane`)

    if TYPE_CHECKING:  # `RowDecoder`'s, after this class in `SqliteReader`'s bases: no stub to shadow it

        def _decode_rows(self, rows: Iterable[RawRow]) -> list[StoredEvent]: ...

    async def run_index(self, stream_id: str) -> RunIndex:
        """`run_ids` in columns: each stream's pages taken into arrays as they are read, the streams merged
        by id (at a million events the id rows' tuples would be ~120 MB)."""
        lo, hi = step_range(stream_id)
        streams = [stream_id, *(column_text(s) for (s,) in await self._fetch(_STREAMS_IN_RANGE, (lo, hi, hi)))]
        parts: list[RunIndex] = []
        for stream in streams:
            part = RunIndex()
            async for page in self._id_pages(stream):
                part.add_page(stream, page)
            parts.append(part)
        return RunIndex.merged(parts)

    async def _id_pages(self, stream: str) -> AsyncIterator[list[Any]]:
        """A stream's (id, sequence) rows, a page at a time, on the (stream_id, sequence) index's own order
        (keyset pages: a damaged store may repeat a sequence)."""
        sql = (
            "SELECT id, sequence FROM events WHERE stream_id = CAST(? AS TEXT) AND (sequence, id) > (?, ?) "
            "ORDER BY sequence, id LIMIT ?"
        )
        after: tuple[Any, int] | None = (-(2**63), -(2**63))
        while after is not None:
            page = await self._fetch(sql, (stream, *after, ID_PAGE))
            yield page
            after = (page[-1][1], page[-1][0]) if len(page) == ID_PAGE else None

    async def run_ids(self, stream_id: str) -> list[IdRow]:
        """Stream by stream from the (stream_id, sequence) index alone (it covers id: the table is not
        read), merged by id: no stream column read per row, and each stream's rows already in id order
        (the sort merges runs)."""
        lo, hi = step_range(stream_id)
        streams = [stream_id, *(column_text(s) for (s,) in await self._fetch(_STREAMS_IN_RANGE, (lo, hi, hi)))]
        out: list[IdRow] = []
        for stream in streams:
            async for page in self._id_pages(stream):  # a page at a time: not held beside the ids
                out += [(gid, stream, seq) for gid, seq in page]
        out.sort()  # runs already in order: linear
        return out

    async def kinds_of(self, ids: list[int]) -> dict[int, str]:
        """Ids that fill most of their span (a long run's): each known kind's ids from the kind index over
        the span, the table not read; the rest (a kind no known tag names, or ids spread thin) by id."""
        # the kinds (pydantic) load with the first event decoded: a long run's kinds are read after that
        from zymi_tui.events.kinds import KIND_BY_TAG

        out: dict[int, str] = {}
        if ids and max(ids) - min(ids) < DENSE_SPAN * len(ids):
            lo, hi = min(ids), max(ids)
            wanted = bytearray(hi - lo + 1)  # a byte per id of the span (under DENSE_SPAN per id), not a set
            for gid in ids:
                wanted[gid - lo] = 1
            for tag in KIND_BY_TAG:
                sql = "SELECT id FROM events WHERE kind_tag = ? AND id BETWEEN ? AND ?"
                out.update((gid, tag) for (gid,) in await self._fetch(sql, (tag, lo, hi)) if wanted[gid - lo])
        rest = [gid for gid in ids if gid not in out]
        for i in range(0, len(rest), ID_BATCH):
            batch = rest[i : i + ID_BATCH]
            sql = f"SELECT id, kind_tag FROM events WHERE id IN ({','.join('?' * len(batch))})"
            out.update((gid, column_text(tag)) for gid, tag in await self._fetch(sql, batch))
        return out

    async def read_ids(self, ids: list[int]) -> list[StoredEvent]:
        return self._decode_rows(await self.read_id_rows(ids))

    async def read_id_rows(self, ids: list[int]) -> list[RawRow]:
        out: list[RawRow] = []
        for i in range(0, len(ids), ID_BATCH):
            batch = ids[i : i + ID_BATCH]
            marks = ",".join("?" * len(batch))
            out += self._sane(await self._fetch(f"{_ROW} WHERE id IN ({marks})", batch))
        out.sort()
        return out
