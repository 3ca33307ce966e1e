"""A store's reader opened at its first use: a `run` writes a fresh stream and never reads it back
(engine/agent.py), so its process need not load the reader (aiosqlite, its thread, its connection)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from zymi_tui.events.hashchain import ChainRow, ChainScan
    from zymi_tui.events.run_index import RunIndex
    from zymi_tui.events.store import EventReader, IdRow, KindRowPage, Page, RawRow, RowPage, StreamInfo
    from zymi_tui.events.stored import BadRow, StoredEvent


class LazyReader:
    """An `EventReader` of `location`, opened (with its errors) when it is first read."""

    def __init__(self, location: StoreLocation, label: str) -> None:
        self.location = location
        self.label = label
        self.problems: list[BadRow] = []  # the opened reader's own list (rows it skipped)
        self._reader: EventReader | None = None
        self._opening = asyncio.Lock()

    @property
    def opened(self) -> bool:
        return self._reader is not None

    async def _open(self) -> EventReader:
        async with self._opening:
            if self._reader is None:
                self._reader = await open_reader(self.location)
                self._reader.problems = self.problems
            return self._reader

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()

    async def count(self) -> int:
        return await (await self._open()).count()

    async def max_global_id(self) -> int:
        return await (await self._open()).max_global_id()

    async def heads_stamp(self) -> tuple[int, int] | None:
        return await (await self._open()).heads_stamp()

    async def streams(self) -> list[StreamInfo]:
        return await (await self._open()).streams()

    async def read_after(self, after_global_id: int, limit: int) -> Page:
        return await (await self._open()).read_after(after_global_id, limit)

    async def read_stream(
        self, stream_id: str, *, include_steps: bool = False, after_global_id: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        reader = await self._open()
        return await reader.read_stream(
            stream_id, include_steps=include_steps, after_global_id=after_global_id, limit=limit
        )

    async def newest(self, stream_id: str, n: int, *, include_steps: bool = False) -> list[StoredEvent]:
        return await (await self._open()).newest(stream_id, n, include_steps=include_steps)

    async def run_ids(self, stream_id: str) -> list[IdRow]:
        return await (await self._open()).run_ids(stream_id)

    async def run_index(self, stream_id: str) -> RunIndex:
        return await (await self._open()).run_index(stream_id)

    async def kinds_of(self, ids: list[int]) -> dict[int, str]:
        return await (await self._open()).kinds_of(ids)

    async def read_ids(self, ids: list[int]) -> list[StoredEvent]:
        return await (await self._open()).read_ids(ids)

    async def read_id_rows(self, ids: list[int]) -> list[RawRow]:
        return await (await self._open()).read_id_rows(ids)

    async def read_kinds(self, tags: list[str], after_global_id: int = 0) -> list[StoredEvent]:
        return await (await self._open()).read_kinds(tags, after_global_id)

    async def read_rows(
        self, after_global_id: int, limit: int, *, stream_id: str | None = None, tag: str | None = None
    ) -> RowPage:
        return await (await self._open()).read_rows(after_global_id, limit, stream_id=stream_id, tag=tag)

    async def read_kinds_rows(self, tags: Sequence[str], after_global_id: int, limit: int) -> KindRowPage:
        return await (await self._open()).read_kinds_rows(tags, after_global_id, limit)

    async def read_rows_before(self, before_global_id: int | None, limit: int, *, tag: str) -> RowPage:
        return await (await self._open()).read_rows_before(before_global_id, limit, tag=tag)

    async def read_kind_page(
        self, tag: str, *, stream_id: str | None, after_global_id: int, limit: int
    ) -> list[StoredEvent]:
        reader = await self._open()
        return await reader.read_kind_page(tag, stream_id=stream_id, after_global_id=after_global_id, limit=limit)

    async def chain_rows(self, stream_id: str) -> list[ChainRow]:
        return await (await self._open()).chain_rows(stream_id)

    async def scan_chains(self, heads: Mapping[str, tuple[int, str]], *, thorough: bool = False) -> ChainScan:
        return await (await self._open()).scan_chains(heads, thorough=thorough)

    async def stream_heads(self) -> Mapping[str, tuple[int, str]]:
        return await (await self._open()).stream_heads()
