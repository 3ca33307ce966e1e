"""The events a store replay reads (store_replay.py), in global order, a page of rows at a time: the next
page read while this one is decoded and replayed, each row decoded only when it is asked for."""

from __future__ import annotations

from array import array
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

from zymi_tui.events.envelope import EventDecodeError
from zymi_tui.events.kind_json import type_name_at
from zymi_tui.events.replay_view import ReplayEvent, decode_replay_row, replay_rows
from zymi_tui.events.store import EventReader, KindRowPage, RawRow, RowPage, run_of
from zymi_tui.events.stored import BadRow
from zymi_tui.replay.call_context import PAGE, REPLAY_KINDS

T = TypeVar("T")
K = TypeVar("K")  # where a page starts
P = TypeVar("P")  # a page
if TYPE_CHECKING:
    import asyncio


def _reads_ahead(reader: EventReader) -> bool:
    """Whether the next page is read while this one is replayed (on the reader's thread or connection);
    not by a reader that reads in this thread (`sqlite_inline`: no event loop, asyncio not loaded)."""
    return getattr(reader, "inline", False) is not True


async def _read_ahead(read: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """The next page's `read`, started: it is sent to the reader (done on its thread or connection) before
    this one is decoded and replayed."""
    import asyncio

    ahead = asyncio.ensure_future(read)
    await asyncio.sleep(0)
    return ahead


async def _pages_read_ahead(
    reader: EventReader, read: Callable[[K], Coroutine[Any, Any, P]], start: K, next_start: Callable[[K, P], K | None]
) -> AsyncGenerator[P, None]:
    """The pages `read(start)`, then `read(next_start(start, page))` until that is None. Each page's next read
    is sent to the reader (done on its thread or connection) before the page is taken, so the next page is
    read while this one is decoded and replayed."""
    ahead: asyncio.Future[P] | None = None
    reads_ahead = _reads_ahead(reader)
    try:
        page = await read(start)
        while True:
            following = next_start(start, page)
            if following is not None and reads_ahead:
                ahead = await _read_ahead(read(following))
            yield page
            if following is None:
                return
            page = await ahead if ahead is not None else await read(following)
            ahead = None
            start = following
    finally:
        if ahead is not None:
            ahead.cancel()


def _after_full(page: RowPage | KindRowPage) -> int | None:
    """Where the page after `page` starts (its last id), when `page` is full (more rows may follow)."""
    return page.last_global_id if page.rows_scanned == PAGE else None


async def replay_events(
    reader: EventReader, streams: Sequence[str] | None, kinds: Sequence[str] = REPLAY_KINDS, *, after: int = 0
) -> AsyncGenerator[ReplayEvent, None]:
    """The events a replay reads, in global order: every event of the runs of `streams`, else the
    kinds the context depends on across the store (decoded as `replay_view` reads them); `kinds`:
    only some of those kinds are needed (the other kinds may come too, with `streams`); `after`:
    from the global id after it (without `streams`)."""
    async with aclosing(event_pages(reader, streams, kinds, after=after)) as pages:
        async for page in pages:
            for se in page:
                yield se


async def event_pages(
    reader: EventReader, streams: Sequence[str] | None, kinds: Sequence[str] = REPLAY_KINDS, *, after: int = 0
) -> AsyncGenerator[Iterator[ReplayEvent], None]:
    """`replay_events` a page at a time: each page decodes its rows as they are asked for, and is
    taken whole (or dropped) before the next page is asked for (an event loop's turn per page, not
    per event)."""
    if streams:
        async with aclosing(_run_events(reader, streams)) as runs:
            async for events in runs:
                yield events
        return

    # only the kinds the context depends on, in one pass in global order (the reader skips the other
    # kinds: decoding is most of a replay's cost, and they are half of a typical store)
    def bad(gid: int, stream_id: str, seq: int, error: str) -> None:
        reader.problems.append(BadRow(gid, stream_id, seq, error))

    def read(after: int) -> Coroutine[Any, Any, KindRowPage]:
        return reader.read_kinds_rows(kinds, after, PAGE)

    async with aclosing(_pages_read_ahead(reader, read, after, lambda _, page: _after_full(page))) as pages:
        async for page in pages:
            yield replay_rows(page.rows, bad)


DENSE_SPAN = 2  # a run whose rows fill more than 1/DENSE_SPAN of their id span is read by id range


async def _run_events(reader: EventReader, streams: Sequence[str]) -> AsyncGenerator[Iterator[ReplayEvent], None]:
    """Every event of the runs of `streams` (each run and its steps), in global order, a page of rows
    at a time (the next page read while this one is decoded), each row decoded only when the replay
    asks for it: at most two pages of rows are held, whatever the run's length, and a caller that stops
    (`context --seq`: at its call) decodes nothing after it. A run that fills most of its span of ids
    (one long run) is read by id range, the other streams' rows in it skipped (its ids, listed, would
    grow with it); else its ids come from the (stream, sequence) index alone, then its rows by id."""
    runs = {run_of(s) for s in streams}
    own = [i for i in await reader.streams() if run_of(i.stream_id) in runs]
    if not own:
        return
    first, last = min(i.first_global_id for i in own), max(i.last_global_id for i in own)
    if last - first < DENSE_SPAN * sum(i.count for i in own):
        wanted = {i.stream_id for i in own}

        def read_range(after: int) -> Coroutine[Any, Any, RowPage]:
            return reader.read_rows(after, PAGE)

        def range_next(_: int, page: RowPage) -> int | None:
            after = _after_full(page)
            return after if after is not None and after < last else None

        async with aclosing(_pages_read_ahead(reader, read_range, first - 1, range_next)) as pages:
            async for page in pages:
                yield _decoding(reader, [r for r in page.rows if r[1] in wanted and r[0] <= last])
        return
    ids = array("q")
    for run in sorted(runs):
        ids.extend(gid for gid, _, _ in await reader.run_ids(run))
    if len(runs) > 1:
        ids = array("q", sorted(ids))  # several runs: in global order (ids are unique)
    if not ids:
        return

    def read_ids(at: int) -> Coroutine[Any, Any, list[RawRow]]:
        return reader.read_id_rows(ids[at : at + PAGE].tolist())

    def ids_next(at: int, _: list[RawRow]) -> int | None:
        return at + PAGE if at + PAGE < len(ids) else None

    async with aclosing(_pages_read_ahead(reader, read_ids, 0, ids_next)) as id_pages:
        async for rows in id_pages:
            yield _decoding(reader, rows)


def _decoding(reader: EventReader, rows: Sequence[RawRow]) -> Iterator[ReplayEvent]:
    """`rows` (of any kinds, each read as `decode_event` reads it) decoded one at a time, as asked for
    (an unreadable row is reported in `reader.problems` and skipped)."""
    for gid, stream_id, seq, data in rows:
        try:
            se = decode_replay_row(type_name_at(data), gid, seq, data)
        except EventDecodeError as e:
            reader.problems.append(BadRow(gid, stream_id, seq, str(e)))
            continue
        yield se
