"""The one place a store location becomes a backend (reader or writer).

The backends are imported when first opened, so a command that never touches Postgres does not
pay for importing asyncpg.
"""

from __future__ import annotations

from zymi_tui.events.location import PostgresStore, SqliteStore, StoreLocation
from zymi_tui.events.store import EventReader, EventWriter
from zymi_tui.events.whole_rows import CopyInProgress, RowSource, RowTarget


async def open_reader(location: StoreLocation, *, inline: bool = False) -> EventReader:
    """Open a store for reading; raises StoreError with a one-line reason. `inline`: a SQLite store is read
    in this thread, with no event loop (`sqlite_inline`: the caller runs with `run_inline`); Postgres is
    always read on an event loop."""
    if isinstance(location, PostgresStore):
        from zymi_tui.events.postgres_read import PostgresReader

        return await PostgresReader.open(location.url)
    from zymi_tui.events.sqlite_read import SqliteReader

    return await SqliteReader.open(location.path, inline=inline)


async def open_writer(location: StoreLocation) -> EventWriter:
    """Open (creating if needed) a store for appending, exactly as zymi writes."""
    if isinstance(location, PostgresStore):
        from zymi_tui.events.postgres_write import PostgresWriter

        return await PostgresWriter.open(location.url)
    from zymi_tui.events.sqlite_write import SqliteWriter

    assert isinstance(location, SqliteStore)
    return await SqliteWriter.open(location.path)


async def open_row_source(location: StoreLocation) -> RowSource:
    """A store's whole rows to copy from (opened read-only; a Postgres source up to its settled horizon)."""
    if isinstance(location, PostgresStore):
        from zymi_tui.events.postgres_rows import PostgresRows

        return await PostgresRows.source(location.url)
    from zymi_tui.events.sqlite_rows import SqliteRows

    return await SqliteRows.source(str(location.path))


async def open_row_target(location: StoreLocation) -> RowTarget:
    """A store to copy whole rows into (created with zymi's schema when missing)."""
    if isinstance(location, PostgresStore):
        from zymi_tui.events.postgres_rows import PostgresRows

        return await PostgresRows.target(location.url)
    from zymi_tui.events.sqlite_rows import SqliteRows

    return await SqliteRows.target(str(location.path))


async def copy_in_progress(location: StoreLocation) -> CopyInProgress | None:
    """Whether `migrate` is copying into this store, or left it half-copied (rows.COPY_MARK)."""
    if isinstance(location, PostgresStore):
        from zymi_tui.events.postgres_rows import PostgresRows

        rows = await PostgresRows.source(location.url)
        try:
            return await rows.copy_in_progress()
        finally:
            await rows.close()
    from zymi_tui.events.sqlite_rows import sqlite_copy_mark

    assert isinstance(location, SqliteStore)
    return sqlite_copy_mark(location.path)
