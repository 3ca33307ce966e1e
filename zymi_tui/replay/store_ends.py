"""Where a store's streams end, as a replay needs it before its first event (`Replayer.forget_finished`):
each stream's last global id, then the completions that close their run. `advise` reads them once and
carries them (`StoreEnds`) to its watch and to every replay of its two passes (and its forked half), so
that all of them replay the store as it was when the command began."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from zymi_tui.events.store import EventReader, RunClosings


@dataclass(frozen=True)
class StoreEnds:
    """Each stream's last global id (`stream_ends`) and the completions that close their run
    (`run_closings`, read after the ends)."""

    ends: dict[str, int]
    closings: array[int]

    @property
    def top(self) -> int:
        """The last global id of the store as it was read."""
        return max(self.ends.values(), default=0)


async def stream_ends(reader: EventReader) -> dict[str, int]:
    """Each stream's last global id, as the store holds now."""
    return {s.stream_id: s.last_global_id for s in await reader.streams()}


async def run_closings(reader: EventReader) -> array[int]:
    """The completions that close their run (`RunClosings`), for `Replayer.forget_finished`; read after
    the ends (a later read finds more later rows: fewer closings, never a wrong one). None from a reader
    that cannot list them: runs are then kept to their streams' ends."""
    return array("q", await reader.closing_completions()) if isinstance(reader, RunClosings) else array("q")


async def store_ends(reader: EventReader) -> StoreEnds:
    """The store's `StoreEnds`, read now (the ends first)."""
    ends = await stream_ends(reader)
    return StoreEnds(ends, await run_closings(reader))
