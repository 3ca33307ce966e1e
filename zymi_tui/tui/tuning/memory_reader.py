"""A run read once and kept in memory, served as an event store (`MemoryReader`), and a step stream of it
replayed whole: what every what-if of the knob editor replays, without reading the store again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.events.hashchain import ChainRow, ChainScan
from zymi_tui.events.run_index import RunIndex
from zymi_tui.events.store import (
    STEP_MARK,
    EventReader,
    IdRow,
    KindRowPage,
    Page,
    RawRow,
    RowPage,
    StreamInfo,
    kind_rows_from_events,
    rows_from_events,
    run_of,
    scan_by_stream,
)
from zymi_tui.events.stored import BadRow, StoredEvent
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_replay import replay_store


@dataclass
class MemoryReader:
    """An EventReader over events already in memory (one run stream and its step streams)."""

    events: list[StoredEvent]
    label: str = "memory"
    problems: list[BadRow] = field(default_factory=list)

    async def close(self) -> None:
        return None

    async def count(self) -> int:
        return len(self.events)

    async def max_global_id(self) -> int:
        return self.events[-1].global_id if self.events else 0

    async def streams(self) -> list[StreamInfo]:
        seen: dict[str, list[int]] = {}
        for se in self.events:
            seen.setdefault(se.event.stream_id, []).append(se.global_id)
        return [StreamInfo(s, len(ids), ids[0], ids[-1]) for s, ids in seen.items()]

    async def read_after(self, after_global_id: int, limit: int) -> Page:
        page = [se for se in self.events if se.global_id > after_global_id][:limit]
        return Page(page, page[-1].global_id if page else after_global_id, len(page))

    async def read_stream(
        self, stream_id: str, *, include_steps: bool = False, after_global_id: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        prefix = stream_id + STEP_MARK
        out = [
            se
            for se in self.events
            if se.global_id > after_global_id
            and (se.event.stream_id == stream_id or (include_steps and se.event.stream_id.startswith(prefix)))
        ]
        if not include_steps:
            out.sort(key=lambda se: se.event.sequence)
        return out if limit is None else out[:limit]

    async def newest(self, stream_id: str, n: int, *, include_steps: bool = False) -> list[StoredEvent]:
        return (await self.read_stream(stream_id, include_steps=include_steps))[-n:]

    async def run_ids(self, stream_id: str) -> list[IdRow]:
        run = await self.read_stream(stream_id, include_steps=True)
        return [(se.global_id, se.event.stream_id, se.event.sequence) for se in run]

    async def run_index(self, stream_id: str) -> RunIndex:
        return RunIndex.from_ids(await self.run_ids(stream_id))

    async def read_ids(self, ids: list[int]) -> list[StoredEvent]:
        wanted = set(ids)
        return [se for se in self.events if se.global_id in wanted]

    async def kinds_of(self, ids: list[int]) -> dict[int, str]:
        return {se.global_id: se.event.tag for se in await self.read_ids(ids)}

    async def read_id_rows(self, ids: list[int]) -> list[RawRow]:
        return [(se.global_id, se.event.stream_id, se.event.sequence, se.data) for se in await self.read_ids(ids)]

    async def read_kinds(self, tags: list[str], after_global_id: int = 0) -> list[StoredEvent]:
        return [se for se in self.events if se.global_id > after_global_id and se.event.kind.tag in tags]

    async def read_kind_page(
        self, tag: str, *, stream_id: str | None, after_global_id: int, limit: int
    ) -> list[StoredEvent]:
        hits = [se for se in await self.read_kinds([tag], after_global_id) if stream_id in (None, se.event.stream_id)]
        return hits[:limit]

    async def read_rows(
        self, after_global_id: int, limit: int, *, stream_id: str | None = None, tag: str | None = None
    ) -> RowPage:
        return await rows_from_events(self, after_global_id, limit, stream_id=stream_id, tag=tag)

    async def read_kinds_rows(self, tags: Sequence[str], after_global_id: int, limit: int) -> KindRowPage:
        return await kind_rows_from_events(self, tags, after_global_id, limit)

    async def read_rows_before(self, before_global_id: int | None, limit: int, *, tag: str) -> RowPage:
        below = [
            se
            for se in self.events
            if se.event.tag == tag and (before_global_id is None or se.global_id < before_global_id)
        ]
        rows = [(se.global_id, se.event.stream_id, se.event.sequence, se.data) for se in reversed(below[-limit:])]
        return RowPage(rows, rows[-1][0] if rows else (before_global_id or 0), len(rows))

    async def chain_rows(self, stream_id: str) -> list[ChainRow]:
        return []

    async def scan_chains(self, heads: Mapping[str, tuple[int, str]], *, thorough: bool = False) -> ChainScan:
        return await scan_by_stream(self, heads)

    async def heads_stamp(self) -> tuple[int, int] | None:
        return None

    async def stream_heads(self) -> dict[str, tuple[int, str]]:
        return {}


async def load_run(reader: EventReader, stream_id: str) -> MemoryReader:
    """The run of a step stream (all its steps), read once."""
    return MemoryReader(await reader.read_stream(run_of(stream_id), include_steps=True), label=reader.label)


async def replay_stream(
    memory: MemoryReader, project: Path | None, stream_id: str, knobs: ContextKnobs | None
) -> list[CallContext]:
    return [c async for c in replay_store(memory, project=project, knobs=knobs, streams=[stream_id])]
