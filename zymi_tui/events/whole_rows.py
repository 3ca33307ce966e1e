"""Whole rows of an event store, as stored: what `migrate` copies between backends.

A row is the `events` table's twelve columns in zymi's order (`COLUMNS`); a copy inserts rows as
they are (ids, sequences, data and hashes untouched), then the stream heads. Each backend module
has its own row access (`sqlite_rows`, `postgres_rows`); `zymi_tui.events.factory.open_rows` picks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import msgspec

COLUMNS = (
    "id", "event_id", "stream_id", "sequence", "timestamp", "kind_tag", "data",
    "correlation_id", "causation_id", "source", "prev_hash", "hash",
)  # fmt: skip
TS, DATA = COLUMNS.index("timestamp"), COLUMNS.index("data")

Row = tuple[Any, ...]
Head = tuple[str, int, str]

# The table a copy in progress leaves in its target: made (one row) before the first row is copied,
# dropped with the stream heads written, in one transaction, once every row is there. A store holding
# it is a copy `migrate` has not finished (interrupted: run it again to resume). zymi ignores it.
COPY_MARK = "zymi_tui_copy_in_progress"


class CopyInProgress(msgspec.Struct, frozen=True):
    """A store `migrate` is copying into, or left half-copied: from where, and how far it got."""

    source: str  # the source's label (a path, or a URL without its password)
    source_upto: int  # the source's last row id the copy is to reach
    copied_upto: int  # the store's last row id now

    def describe(self, label: str) -> str:
        return (
            f"{label} is a copy that `zymi-tui migrate` has not finished: rows up to id {self.copied_upto} "
            f"of {self.source_upto} copied from {self.source}, no stream heads yet (run the same migrate "
            "again to finish it)"
        )


class RowSource(Protocol):
    """A store read row by row, in id order."""

    label: str

    async def max_id(self) -> int: ...
    async def count_upto(self, gid: int) -> int: ...
    async def event_id_at(self, gid: int) -> str | None: ...
    async def rows(self, after: int, upto: int, limit: int) -> list[Row]: ...
    async def heads(self) -> list[Head]: ...
    async def close(self) -> None: ...


class RowTarget(RowSource, Protocol):
    """A store rows are inserted into as they are, then its stream heads."""

    async def begin_copy(self, source: str, source_upto: int) -> None: ...
    async def insert(self, rows: Sequence[Row]) -> None: ...
    async def last_link(self, stream_id: str) -> tuple[int, str] | None: ...
    async def has_link(self, stream_id: str, sequence: int, digest: str) -> bool: ...
    async def finish_copy(self, heads: Sequence[Head]) -> None:
        """The stream heads written and COPY_MARK dropped, in one transaction."""
        ...
