"""The one place a store location becomes a backend (reader or writer).

The backends are imported when first opened, so a command that never touches Postgres does not
pay for importing asyncpg.
"""

from __future__ import annotations

from zymi_tui.events.location import PostgresStore, SqliteStore, StoreLocation
from zymi_tui.events.store import EventReader, EventWriter


async def open_reader(location: StoreLocation) -> EventReader:
    """Open a store for reading; raises StoreError with a one-line reason."""
    if isinstance(location, PostgresStore):
        from zymi_tui.events.postgres import PostgresReader

        return await PostgresReader.open(location.url)
    from zymi_tui.events.sqlite import SqliteReader

    return await SqliteReader.open(location.path)


async def open_writer(location: StoreLocation) -> EventWriter:
    """Open (creating if needed) a store for appending, exactly as zymi writes."""
    if isinstance(location, PostgresStore):
        from zymi_tui.events.postgres import PostgresWriter

        return await PostgresWriter.open(location.url)
    from zymi_tui.events.sqlite import SqliteWriter

    assert isinstance(location, SqliteStore)
    return await SqliteWriter.open(location.path)
