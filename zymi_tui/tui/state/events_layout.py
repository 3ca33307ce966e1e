"""The events list of a run as laid out (`events.EventsModel` decides which rows are shown and how they are
grouped): its items (group headers and rows), where each shown event is among them, the lines each takes (an
expanded event's payload adds lines), and the moves through it by event and by line."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Collection, Iterable

from zymi_tui.events.run_index import IndexRow, RunIndex
from zymi_tui.tui.state.item_index import ItemIndex
from zymi_tui.tui.state.run_index import Header, Items


class EventsLayout:
    """Items over a run's index, flat or in groups each under its header; heights from `reflow`."""

    __slots__ = ("_exp_extra", "_exp_items", "_exp_starts", "_group_pos", "_headers", "_index", "_total", "items")

    def __init__(self, items: Items, headers: list[int] | None = None) -> None:
        self.items = items
        self._index = ItemIndex(items)  # gid -> item index
        # the headers' item indexes, and where each group's events start among the visible events: an
        # event's position (for the cursor's moves) is its item index less the headers above it
        self._headers = headers if headers is not None else []
        self._group_pos = [h - k for k, h in enumerate(self._headers)]
        # expanded items (item index, first line, extra lines), in item order: a line's item is found by
        # bisecting these, so expanding one event costs O(expanded), not O(events)
        self._exp_items: list[int] = []
        self._exp_starts: list[int] = []
        self._exp_extra: list[int] = []
        self._total = len(items)

    @classmethod
    def flat(cls, rows: RunIndex, shown: Iterable[int]) -> EventsLayout:
        """The rows at positions `shown`, in their order."""
        items = Items(rows)
        for pos in shown:
            items.add_row(pos)
        layout = cls(items)
        layout._index.add_run(0, len(items))
        return layout

    @classmethod
    def grouped(cls, rows: RunIndex, groups: Iterable[tuple[str, array[int]]]) -> EventsLayout:
        """Each group's header (its key and size), then its rows (positions)."""
        items = Items(rows)
        headers: list[int] = []
        for group, members in groups:
            headers.append(len(items))
            items.add_header(Header(group, len(members)))
            for pos in members:
                items.add_row(pos)
        layout = cls(items, headers)
        if headers:
            for k, h in enumerate(headers):
                layout._index.add_run(h + 1, headers[k + 1] if k + 1 < len(headers) else len(items))
        else:
            layout._index.add_run(0, len(items))
        return layout

    def extend(self, shown: list[int], group: str | None) -> bool:
        """Add rows (positions) newer than every row listed at the end: of the flat list (`group` None), or of
        the last group when it is `group`; False (nothing added) when they do not go there."""
        items = self.items
        tail = items[-1] if items else None
        if isinstance(tail, Header) or (tail is not None and tail[0] > items.rows.gid(shown[0])):
            return False  # not newer than the list's last row (never, from a live tail)
        if group is not None:
            header = items[self._headers[-1]] if self._headers else None
            if not isinstance(header, Header) or header.group != group:
                return False  # a group before the last one grows: its rows move the ones below
            items.set_header(self._headers[-1], Header(group, header.count + len(shown)))
        for pos in shown:
            items.add_row(pos)
            self._index.append(len(items) - 1)
        return True

    def reflow(self, expanded: Collection[int], height: Callable[[Header | IndexRow], int]) -> None:
        """Where each expanded event (of ids `expanded`) starts and how many lines it adds."""
        exp = sorted(i for gid in expanded if (i := self._index.get(gid)) is not None)
        self._exp_items, self._exp_starts, self._exp_extra = exp, [], []
        extra = 0
        for i in exp:
            self._exp_starts.append(i + extra)
            n = height(self.items[i]) - 1
            self._exp_extra.append(n)
            extra += n
        self._total = len(self.items) + extra

    def __contains__(self, gid: int) -> bool:
        return gid in self._index

    def row_of(self, gid: int) -> IndexRow | None:
        """The shown row of an event; None when it is filtered out."""
        i = self._index.get(gid)
        item = self.items[i] if i is not None else None
        return None if item is None or isinstance(item, Header) else item

    # -- lines --------------------------------------------------------------------------------
    @property
    def line_count(self) -> int:
        return self._total

    def _start(self, i: int) -> int:
        k = bisect.bisect_left(self._exp_items, i)
        return i if k == 0 else i + self._exp_starts[k - 1] - self._exp_items[k - 1] + self._exp_extra[k - 1]

    def locate(self, y: int) -> tuple[int, int]:
        """(item index, line within the item) of view line y."""
        k = bisect.bisect_right(self._exp_starts, y)
        if k == 0:
            return y, 0
        start, item, extra = self._exp_starts[k - 1], self._exp_items[k - 1], self._exp_extra[k - 1]
        if y <= start + extra:
            return item, y - start
        return item + (y - start - extra), 0

    def span_of(self, gid: int) -> tuple[int, int] | None:
        """(first line, height) of an event, or None when it is filtered out."""
        i = self._index.get(gid)
        if i is None:
            return None
        k = bisect.bisect_left(self._exp_items, i)
        if k < len(self._exp_items) and self._exp_items[k] == i:
            return self._exp_starts[k], 1 + self._exp_extra[k]
        return self._start(i), 1

    def gid_on_line(self, y: int) -> int | None:
        """The event on view line y, or the first of the group whose header is there; None: none."""
        if not self.items or y < 0 or y >= self._total:
            return None
        i, _ = self.locate(y)
        item = self.items[i]
        if not isinstance(item, Header):
            return item[0]
        if i + 1 < len(self.items):
            nxt = self.items[i + 1]
            if not isinstance(nxt, Header):
                return nxt[0]
        return None

    # -- moves by event -----------------------------------------------------------------------
    @property
    def visible_count(self) -> int:
        return len(self.items) - len(self._headers)

    def gid_at(self, pos: int) -> int:
        """The gid of the visible event at `pos` (0 = the top one), headers skipped."""
        item = self.items[pos + bisect.bisect_right(self._group_pos, pos)]
        assert not isinstance(item, Header)
        return item[0]

    def first(self) -> int | None:
        return self.gid_at(0) if self.visible_count else None

    def last(self) -> int | None:
        return self.gid_at(self.visible_count - 1) if self.visible_count else None

    def moved(self, gid: int | None, delta: int) -> int | None:
        """The event `delta` events (headers skipped) from `gid`, clamped at both ends; from the bottom (or,
        moving up, the top) when `gid` is not shown; None when none is."""
        count = self.visible_count
        if not count:
            return None
        i = self._index.get(gid) if gid is not None else None
        if i is None:
            return self.gid_at(count - 1 if delta >= 0 else 0)
        pos = i - bisect.bisect_left(self._headers, i)
        return self.gid_at(max(0, min(count - 1, pos + delta)))

    def nearest(self, gid: int) -> int | None:
        """The shown event of the lowest id not below `gid` (else the last one); None when none is shown."""
        gids = self._index.gids()
        if not gids:
            return None
        i = bisect.bisect_left(gids, gid)
        return gids[min(i, len(gids) - 1)]
