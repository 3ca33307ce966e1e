"""Whole rows of an event store, as stored: what `migrate` copies between backends.

A row is the `events` table's twelve columns in zymi's order (`COLUMNS`); a copy inserts rows as
they are (ids, sequences, data and hashes untouched), then the stream heads. Each backend module
has its own row access (`sqlite_rows`, `postgres_rows`); `zymi_tui.events.factory.open_rows` picks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

COLUMNS = (
    "id", "event_id", "stream_id", "sequence", "timestamp", "kind_tag", "data",
    "correlation_id", "causation_id", "source", "prev_hash", "hash",
)  # fmt: skip
TS, DATA = COLUMNS.index("timestamp"), COLUMNS.index("data")

Row = tuple[Any, ...]
Head = tuple[str, int, str]


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

    async def insert(self, rows: Sequence[Row]) -> None: ...
    async def last_link(self, stream_id: str) -> tuple[int, str] | None: ...
    async def has_link(self, stream_id: str, sequence: int, digest: str) -> bool: ...
    async def put_heads(self, heads: Sequence[Head]) -> None: ...
