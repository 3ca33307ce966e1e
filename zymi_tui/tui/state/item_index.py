"""Where each event of a laid-out events list is (its item index), by global id, in 8 bytes an event:
each run of consecutive items in id order (a group's rows) is an array of its ids and the item index
of its first; a lookup bisects them. A dict of a million ids to their places costs ~80 bytes an event."""

from __future__ import annotations

import bisect
import operator
from array import array
from collections.abc import Iterable
from itertools import islice


class ItemIndex:
    """gid -> item index. Runs of items whose ids ascend (`add_run`, `append`); an id out of order starts
    a run of its own (rows are in id order, so a group is one run)."""

    __slots__ = ("_gids", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []  # the item index of each run's first id
        self._gids: list[array[int]] = []  # each run's ids, ascending

    def add_run(self, start: int, gids: Iterable[int]) -> None:
        """Items start, start+1, ... hold these ids."""
        run = array("q", gids)
        if all(map(operator.lt, run, islice(run, 1, None))):  # ascending (a group's rows): one array, no copy
            if run:
                self._starts.append(start)
                self._gids.append(run)
            return
        for i, gid in enumerate(run):
            self.append(gid, start + i)

    def append(self, gid: int, item: int) -> None:
        """Item `item` holds `gid`."""
        if self._gids:
            last = self._gids[-1]
            if self._starts[-1] + len(last) == item and (not last or last[-1] < gid):
                last.append(gid)
                return
        self._starts.append(item)
        self._gids.append(array("q", [gid]))

    def get(self, gid: int) -> int | None:
        for start, gids in zip(self._starts, self._gids, strict=True):
            i = bisect.bisect_left(gids, gid)
            if i < len(gids) and gids[i] == gid:
                return start + i
        return None

    def __contains__(self, gid: int) -> bool:
        return self.get(gid) is not None

    def gids(self) -> list[int]:
        """Every id, ascending."""
        return sorted(gid for gids in self._gids for gid in gids)
