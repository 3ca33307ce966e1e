"""The store interface every backend implements: readers never write; writers write exactly as zymi.

Which backend serves a location is decided in `zymi_tui.events.factory`; where a command's store
is, in `zymi_tui.project.locate`.
"""

from __future__ import annotations

import errno
import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

import msgspec

from zymi_tui.errors import UserError
from zymi_tui.events.hashchain import ChainRow, ChainScan, scan_rows
from zymi_tui.events.run_index import IdRow as IdRow
from zymi_tui.events.run_index import IndexRow as IndexRow
from zymi_tui.events.run_index import RunIndex
from zymi_tui.events.stored import BadRow, StoredEvent

if TYPE_CHECKING:
    from zymi_tui.events.kinds import Event


class StoreError(UserError):
    """A store cannot be opened or read. The message is one line meant for a person."""

    title = "Store"


class StoreLocked(StoreError):
    """Another process held the store locked for longer than a reader waits (the tail retries)."""


class StreamInfo(msgspec.Struct, frozen=True):
    stream_id: str
    count: int
    first_global_id: int
    last_global_id: int


class Page(msgspec.Struct, frozen=True):
    """Events read in global order; `last_global_id` is the highest row id scanned (bad rows included)."""

    events: list[StoredEvent]
    last_global_id: int
    rows_scanned: int


RawRow = tuple[int, str, int, str]  # (global id, stream id, sequence, the stored `data` text)
# a row as SQLite returns it with its `data` as bytes (its UTF-8, unchecked) and its columns unchecked
Utf8Row = tuple[int, str, int, bytes]


class RowPage(msgspec.Struct, frozen=True):
    """Rows as stored, not decoded; `last_global_id` and `rows_scanned` as in `Page`."""

    rows: list[RawRow]
    last_global_id: int
    rows_scanned: int


KindRow = tuple[int, str, int, str, str]  # (global id, stream id, sequence, kind tag, the stored `data` text)


class KindRowPage(msgspec.Struct, frozen=True):
    """Rows of some kinds as stored, each with its `kind_tag` column; `last_global_id` and `rows_scanned`
    as in `Page` (of the rows of those kinds)."""

    rows: list[KindRow]
    last_global_id: int
    rows_scanned: int


class EventReader(Protocol):
    """Read-only access to an event store. Pages by global id; never loads a whole store."""

    label: str
    problems: list[BadRow]

    async def close(self) -> None: ...
    async def count(self) -> int: ...
    async def max_global_id(self) -> int: ...
    async def streams(self) -> list[StreamInfo]: ...
    async def read_after(self, after_global_id: int, limit: int) -> Page: ...
    async def read_stream(
        self, stream_id: str, *, include_steps: bool = False, after_global_id: int = 0, limit: int | None = None
    ) -> list[StoredEvent]: ...
    async def newest(self, stream_id: str, n: int, *, include_steps: bool = False) -> list[StoredEvent]: ...
    async def run_ids(self, stream_id: str) -> list[IdRow]:
        """A run stream's and its step streams' rows, where each is and not what it is (no kind, no data),
        in global order: what a store's (stream, sequence) index alone gives. Kinds: `kinds_of`."""
        ...

    async def run_index(self, stream_id: str) -> RunIndex:
        """`run_ids` in columns, the kinds to come ("" each): a long run listed without a tuple a row."""
        ...

    async def kinds_of(self, ids: list[int]) -> dict[int, str]:
        """The kind tag of each of these global ids, by id (ids not in the store are left out)."""
        ...

    async def read_ids(self, ids: list[int]) -> list[StoredEvent]:
        """The events of these global ids, in global order (ids not in the store are left out)."""
        ...

    async def read_id_rows(self, ids: list[int]) -> list[RawRow]:
        """`read_ids`'s rows as stored, not decoded (a reader that needs a few fields decodes them)."""
        ...

    async def read_kinds(self, tags: list[str], after_global_id: int = 0) -> list[StoredEvent]: ...
    async def read_rows(
        self, after_global_id: int, limit: int, *, stream_id: str | None = None, tag: str | None = None
    ) -> RowPage: ...
    async def read_kind_page(
        self, tag: str, *, stream_id: str | None, after_global_id: int, limit: int
    ) -> list[StoredEvent]: ...
    async def read_rows_before(self, before_global_id: int | None, limit: int, *, tag: str) -> RowPage:
        """The `limit` rows of one kind just below a global id (None: the newest), newest first, as stored
        (not decoded); `last_global_id` is the lowest id read: the next page's `before_global_id`."""
        ...

    async def read_kinds_rows(self, tags: Sequence[str], after_global_id: int, limit: int) -> KindRowPage:
        """The next `limit` rows whose `kind_tag` is one of `tags`, in global order, as stored (not
        decoded), with their tag: several kinds in one pass over the store (a replay reads a dozen kinds,
        about half the rows), one kind on its index."""
        ...

    async def chain_rows(self, stream_id: str) -> list[ChainRow]: ...
    async def scan_chains(self, heads: Mapping[str, tuple[int, str]], *, thorough: bool = False) -> ChainScan:
        """Every stream's chain rows fed to a `ChainScan`, each stream's rows in ascending global id (how
        a backend orders streams among themselves, and where it hashes, is its own), and in its `damage`
        what the backend finds wrong with its storage (`thorough`: its slowest, fullest check)."""
        ...

    async def stream_heads(self) -> Mapping[str, tuple[int, str]]: ...
    async def heads_stamp(self) -> tuple[int, int] | None:
        """A figure of `stream_heads` that changes with every append zymi's writers make (its heads and the sum
        of their sequences), read cheaply; None where not known (the heads are then read again)."""
        ...


@runtime_checkable
class RunClosings(Protocol):
    """A reader that can list the completions that close their run: see `closing_completions`."""

    async def closing_completions(self) -> list[int]:
        """The global ids, ascending, of the `pipeline_completed` rows with a correlation id that no
        later row of the store carries (by the columns): no later event can look their run up again."""
        ...


@runtime_checkable
class BlockingRows(Protocol):
    """A reader that can also read rows blocking, on a connection of its own, for code that cannot
    await (a context build showing texts its builder dropped: context/texts.py)."""

    def rows_at(self, stream_id: str, sequences: Sequence[int]) -> list[RawRow]:
        """The rows of `stream_id` at these sequences (those the store holds), blocking."""
        ...


class EventWriter(Protocol):
    """Appends events exactly as zymi does: per-stream sequence, v2 hash chain, stream head."""

    label: str

    async def close(self) -> None: ...
    async def append(self, event: Event) -> StoredEvent: ...
    def append_now(self, event: Event) -> StoredEvent | None:
        """Append without waiting for anything (so nothing can interrupt it), when the backend can;
        None (nothing written) when it has to wait: then `append`."""
        ...

    async def checkpoint(self) -> None: ...


class Closable(ABC):
    """What every backend's reader and writer share: `async with` one closes it on the way out."""

    @abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class BatchAppender(Closable):
    """What every backend's writer shares: `append` is `append_many` of one event (one transaction)."""

    @abstractmethod
    async def append_many(self, events: Sequence[Event]) -> list[StoredEvent]: ...

    async def append(self, event: Event) -> StoredEvent:
        return (await self.append_many([event]))[0]


async def rows_from_events(
    reader: EventReader, after_global_id: int, limit: int, *, stream_id: str | None, tag: str | None
) -> RowPage:
    """`read_rows` for a reader that only reads decoded events: the same rows, through its decoder."""
    if tag is not None or stream_id is not None:
        if tag is not None:
            found = await reader.read_kind_page(tag, stream_id=stream_id, after_global_id=after_global_id, limit=limit)
        else:
            assert stream_id is not None
            found = await reader.read_stream(
                stream_id, include_steps=True, after_global_id=after_global_id, limit=limit
            )
        last, scanned = (found[-1].global_id if found else after_global_id), len(found)
    else:
        page = await reader.read_after(after_global_id, limit)
        found, last, scanned = page.events, page.last_global_id, page.rows_scanned
    return RowPage([(se.global_id, se.event.stream_id, se.event.sequence, se.data) for se in found], last, scanned)


async def kind_rows_from_events(
    reader: EventReader, tags: Sequence[str], after_global_id: int, limit: int
) -> KindRowPage:
    """`read_kinds_rows` for a reader that only reads decoded events: the same rows, through its decoder."""
    found = (await reader.read_kinds(list(tags), after_global_id))[:limit]
    rows = [(se.global_id, se.event.stream_id, se.event.sequence, se.event.tag, se.data) for se in found]
    return KindRowPage(rows, found[-1].global_id if found else after_global_id, len(found))


async def scan_by_stream(reader: EventReader, heads: Mapping[str, tuple[int, str]]) -> ChainScan:
    """`scan_chains` as one `chain_rows` read per stream."""
    scan = ChainScan(heads)
    for info in await reader.streams():
        scan.feed(scan_rows(info.stream_id, await reader.chain_rows(info.stream_id)))
    return scan


STEP_MARK = ":step:"


def step_prefix(run_stream: str) -> str:
    return run_stream + STEP_MARK


def step_range(run_stream: str) -> tuple[str, str]:
    """Bounds such that `lo <= s < hi` (byte order) holds exactly for `<run_stream>:step:*`: a range an
    index serves, where a prefix match may not."""
    lo = step_prefix(run_stream)
    return lo, lo[:-1] + chr(ord(STEP_MARK[-1]) + 1)


def run_of(stream_id: str) -> str:
    """The run stream a step sub-stream belongs to (`<run>:step:<id>` -> `<run>`)."""
    return stream_id.split(STEP_MARK, 1)[0]


def step_of(stream_id: str) -> str | None:
    return stream_id.split(STEP_MARK, 1)[1] if STEP_MARK in stream_id else None


_NOT_FILES = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISSOCK, "a socket"))  # fmt: skip


def stat_store_path(path: Path) -> os.stat_result | None:
    """`os.stat` of a STORE path (None when nothing is there), with each reason it cannot be one
    as a StoreError: a symlink loop, a folder we may not enter, a FIFO or a device (never opened:
    opening a FIFO blocks until a writer comes)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise StoreError(f"symlink loop at {path}: its links point at each other, not at a store") from None
        if e.errno == errno.EACCES:
            raise StoreError(
                f"cannot open {path}: permission denied (a folder on the way cannot be entered by this user)"
            ) from None
        raise StoreError(f"cannot open {path}: {e.strerror}") from None
    for test, what in _NOT_FILES:
        if test(st.st_mode):
            raise StoreError(f"{path} is {what}, not an SQLite store: pass a .db file or a project folder")
    return st
