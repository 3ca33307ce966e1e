"""A run's laid-out events list over its index (`events.run_index.RunIndex`, in columns): 4 bytes an entry,
a row or a header, made as an `IndexRow` tuple or a `Header` when one is read, so the screens see the same
items as before (issue 34: the dashboard at a million events in 100 MB)."""

from __future__ import annotations

import bisect
import operator
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import overload

from zymi_tui.events.run_index import IndexRow, RunIndex


@dataclass(frozen=True, slots=True)
class Header:
    group: str  # RUN_GROUP or a step id
    count: int

    @property
    def title(self) -> str:
        name = "run stream" if self.group == "" else f"step {self.group}"
        return f"── {name} ({self.count} event{'s' if self.count != 1 else ''})"


class Items:
    """A laid-out events list: each entry a row of a RunIndex (its position) or a header, 4 bytes an entry."""

    __slots__ = ("_at", "_headers", "rows")

    def __init__(self, rows: RunIndex) -> None:
        self.rows = rows
        self._at = array("i")  # a row's position, or -1 - k for the k-th header (a list holds < 2**31 rows)
        self._headers: list[Header] = []

    def add_header(self, header: Header) -> None:
        self._at.append(-1 - len(self._headers))
        self._headers.append(header)

    def add_row(self, pos: int) -> None:
        self._at.append(pos)

    def set_header(self, i: int, header: Header) -> None:
        self._headers[-1 - self._at[i]] = header

    def gid(self, i: int) -> int | None:
        """The id of item i's row; None for a header."""
        at = self._at[i]
        return None if at < 0 else self.rows.gid(at)

    def __len__(self) -> int:
        return len(self._at)

    def ascending(self, start: int, stop: int) -> bool:
        """Whether items [start, stop) are rows whose ids ascend (their positions do, and the index's ids)."""
        with memoryview(self._at)[start:stop] as at:  # read in place: a copy was 4 bytes a row (4 MB at 1M events)
            return (not at or min(at) >= 0) and all(map(operator.lt, at, islice(at, 1, None))) and self.rows.ascending()

    def find(self, gid: int, start: int, stop: int) -> int | None:
        """The index of the row item of id `gid` among items [start, stop), rows whose ids ascend; else None."""
        at, rows = self._at, self.rows
        i = bisect.bisect_left(at, gid, start, stop, key=rows.gid)
        return i if i < stop and rows.gid(at[i]) == gid else None

    def _item(self, at: int) -> Header | IndexRow:
        return self._headers[-1 - at] if at < 0 else self.rows.row(at)

    def __iter__(self) -> Iterator[Header | IndexRow]:
        return (self._item(at) for at in self._at)

    @overload
    def __getitem__(self, i: int) -> Header | IndexRow: ...
    @overload
    def __getitem__(self, i: slice) -> list[Header | IndexRow]: ...
    def __getitem__(self, i: int | slice) -> Header | IndexRow | list[Header | IndexRow]:
        if isinstance(i, slice):
            return [self._item(at) for at in self._at[i]]
        return self._item(self._at[i])


__all__ = ["Header", "Items", "RunIndex"]
