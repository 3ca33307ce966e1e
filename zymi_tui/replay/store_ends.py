"""Where a store's streams end, as a replay needs it before its first event (`Replayer.forget_finished`):
each stream's last global id, then the completions that close their run. `advise` reads them once and
carries them (`StoreEnds`) to its watch and to every replay of its two passes (and its forked half), so
that all of them replay the store as it was when the command began."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, overload

from zymi_tui.events.store import EventReader, RunClosings

CACHED_ENDS = 4096  # streams whose ends `StreamEnds` keeps (then it forgets them all and reads again)
LONG_STREAM = 1024  # events of a stream whose end is read with the others (its own read is a scan of them)


class Ends(Protocol):
    """Each stream's last global id, as `Replayer.forget_finished` asks it: a dict, or `StreamEnds` (both
    true when given: a replay without `forget_finished` holds an empty dict)."""

    @overload
    def get(self, stream: str, /) -> int | None: ...
    @overload
    def get(self, stream: str, default: int, /) -> int: ...
    def __contains__(self, stream: object, /) -> bool: ...


class StreamEnds:
    """`stream_ends` of a store up to global id `top`, each read when first asked (`read(stream, top)`:
    None for no such stream) and a few kept: what a replay of a store of many runs asks of it, without
    every stream's end held (50,000 streams: ~9 MB). `long`: the ends of the streams of `LONG_STREAM`
    events or more (a stream's own read goes through its events) and of those `read` does not read (a
    stream id held as a BLOB: `SqliteReader.stream_spans`), read already."""

    def __init__(self, read: Callable[[str, int], int | None], top: int, long: dict[str, int] | None = None) -> None:
        self.read, self.top = read, top
        self.long = long or {}
        self.known: dict[str, int | None] = {}

    def _end(self, stream: str) -> int | None:
        end = self.long.get(stream)
        if end is not None:
            return end
        known = self.known
        if stream in known:
            return known[stream]
        if len(known) >= CACHED_ENDS:
            known.clear()
        end = known[stream] = self.read(stream, self.top)
        return end

    @overload
    def get(self, stream: str, /) -> int | None: ...
    @overload
    def get(self, stream: str, default: int, /) -> int: ...
    def get(self, stream: str, default: int | None = None, /) -> int | None:
        end = self._end(stream)
        return default if end is None else end

    def __contains__(self, stream: object, /) -> bool:
        return isinstance(stream, str) and self._end(stream) is not None

    def __bool__(self) -> bool:
        return True


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


def ends_top(ends: dict[str, int] | StreamEnds) -> int:
    """The last global id of the store as its `ends` were read."""
    return ends.top if isinstance(ends, StreamEnds) else max(ends.values(), default=0)


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
