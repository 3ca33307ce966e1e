"""Where each event of a laid-out events list is (its item index), by global id, with no copy of the ids: each
run of consecutive items whose ids ascend (a group's rows) is kept as its first and last item, and a lookup
bisects the list's own items by id (`Items.find`). A dict of a million ids to their places costs ~80 bytes an
event, an array of their ids 8 (issue 34: the dashboard at a million events in 100 MB)."""

from __future__ import annotations

from zymi_tui.tui.state.run_index import Items


class ItemIndex:
    """gid -> item index over `items`. Runs of row items whose ids ascend (`add_run`, `append`); an id out of
    order starts a run of its own (rows are in id order, so a group is one run)."""

    __slots__ = ("_items", "_starts", "_stops")

    def __init__(self, items: Items) -> None:
        self._items = items
        self._starts: list[int] = []  # each run's first item
        self._stops: list[int] = []  # each run's end (its last item + 1)

    def add_run(self, start: int, stop: int) -> None:
        """Items [start, stop), rows (no header), split where their ids stop ascending."""
        if stop > start and self._items.ascending(start, stop):  # a group's rows: one run, found at C speed
            self._starts.append(start)
            self._stops.append(stop)
            return
        gid = self._items.gid
        last = None
        for i in range(start, stop):
            now = gid(i)
            if now is None:  # a header (none is given): the next row starts a run
                last = None
                continue
            if last is None or now <= last:
                self._starts.append(i)
                self._stops.append(i + 1)
            else:
                self._stops[-1] = i + 1
            last = now

    def append(self, item: int) -> None:
        """Item `item` (a row) was added."""
        if self._stops and self._stops[-1] == item:
            last, now = self._items.gid(item - 1), self._items.gid(item)
            if last is not None and now is not None and last < now:
                self._stops[-1] = item + 1
                return
        self._starts.append(item)
        self._stops.append(item + 1)

    def get(self, gid: int) -> int | None:
        find = self._items.find
        for start, stop in zip(self._starts, self._stops, strict=True):
            i = find(gid, start, stop)
            if i is not None:
                return i
        return None

    def __contains__(self, gid: int) -> bool:
        return self.get(gid) is not None

    def gids(self) -> list[int]:
        """Every id, ascending."""
        gid = self._items.gid
        runs = zip(self._starts, self._stops, strict=True)
        return sorted(x for start, stop in runs for i in range(start, stop) if (x := gid(i)) is not None)
