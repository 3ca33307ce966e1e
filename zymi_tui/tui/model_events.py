"""The events list of the selected run: run stream plus step sub-streams, grouped, filtered, expandable.

Pure: no widgets, no IO. The view asks for `line_count`, `locate(y)` and `text_line(y)`; heights
depend on which events are expanded and on the width (expanded payloads wrap).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from zymi_tui.events.store import step_of
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui.safe_text import clean, wrap_cells

if TYPE_CHECKING:
    from zymi_tui.events.describe import Line

RUN_GROUP = ""  # the group key of the run stream itself


@dataclass(frozen=True, slots=True)
class Header:
    group: str  # RUN_GROUP or a step id
    count: int

    @property
    def title(self) -> str:
        name = "run stream" if self.group == RUN_GROUP else f"step {self.group}"
        return f"── {name} ({self.count} event{'s' if self.count != 1 else ''})"


@dataclass(slots=True)
class EventsModel:
    """Events of one run or turn, in global order, with the view state that survives live updates."""

    events: list[StoredEvent] = field(default_factory=list)
    group_by_step: bool = True
    kinds: set[str] | None = None  # kind tags to show; None = all
    step: str | None = None  # RUN_GROUP, a step id, or None = all
    search: str = ""
    expanded: set[int] = field(default_factory=set)  # global ids
    width: int = 80
    cursor_gid: int | None = None  # the selected event (stable across updates)
    mark: tuple[str, int, int] | None = None  # (stream, lo, hi) highlighted: what a compaction replaced
    _lines: dict[int, Line] = field(default_factory=dict)
    _detail: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    items: list[Header | StoredEvent] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)
    _total: int = 0
    _index: dict[int, int] = field(default_factory=dict)  # gid -> item index
    _order: list[int] = field(default_factory=list)  # visible event gids, top to bottom
    _pos: dict[int, int] = field(default_factory=dict)  # gid -> position in _order

    # -- data ---------------------------------------------------------------------------------
    def set_events(self, events: Iterable[StoredEvent]) -> None:
        self.events = list(events)
        self.relayout()

    def append(self, events: Iterable[StoredEvent]) -> int:
        """Add newer events; returns how many were added (the layout is rebuilt, the cursor kept)."""
        added = list(events)
        if not added:
            return 0
        self.events.extend(added)
        self.relayout()
        return len(added)

    def line_of(self, se: StoredEvent) -> Line:
        line = self._lines.get(se.global_id)
        if line is None:
            # how events read (and the kinds, pydantic) load with the first event drawn, not the first frame
            from zymi_tui.events.describe import describe

            line = self._lines[se.global_id] = describe(se.event)
        return line

    @property
    def steps(self) -> list[str]:
        seen: dict[str, None] = {}
        for se in self.events:
            seen.setdefault(step_of(se.event.stream_id) or RUN_GROUP, None)
        return list(seen)

    @property
    def kind_tags(self) -> list[str]:
        return sorted({se.event.tag for se in self.events})

    # -- filtering and layout -----------------------------------------------------------------
    def _visible(self, se: StoredEvent, needle: str) -> bool:
        if self.kinds is not None and se.event.tag not in self.kinds:
            return False
        if self.step is not None and (step_of(se.event.stream_id) or RUN_GROUP) != self.step:
            return False
        if needle:
            line = self.line_of(se)
            hay = f"{line.label} {line.detail} {se.event.type_name}".lower()
            if needle not in hay and needle not in se.data.lower():
                return False
        return True

    def relayout(self) -> None:
        needle = self.search.lower().strip()
        shown = [se for se in self.events if self._visible(se, needle)]
        items: list[Header | StoredEvent] = []
        if self.group_by_step:
            groups: dict[str, list[StoredEvent]] = {}
            for se in shown:
                groups.setdefault(step_of(se.event.stream_id) or RUN_GROUP, []).append(se)
            order = sorted(groups, key=lambda g: (g != RUN_GROUP, groups[g][0].global_id))
            for g in order:
                items.append(Header(g, len(groups[g])))
                items.extend(groups[g])
        else:
            items.extend(shown)
        self.items = items
        self._index = {it.global_id: i for i, it in enumerate(items) if isinstance(it, StoredEvent)}
        self._order = list(self._index)
        self._pos = {g: i for i, g in enumerate(self._order)}
        heights = (self.height(it) for it in items)
        self._starts = [0, *itertools.accumulate(heights)]
        self._total = self._starts[-1]
        self._starts.pop()
        if self.cursor_gid is not None and self.cursor_gid not in self._index:
            self.cursor_gid = self._nearest_visible(self.cursor_gid)

    def _nearest_visible(self, gid: int) -> int | None:
        gids = sorted(self._order)
        if not gids:
            return None
        i = bisect.bisect_left(gids, gid)
        return gids[min(i, len(gids) - 1)]

    def height(self, item: Header | StoredEvent) -> int:
        if isinstance(item, Header) or item.global_id not in self.expanded:
            return 1
        return 1 + len(self.detail_lines(item))

    def detail_lines(self, se: StoredEvent) -> list[str]:
        key = (se.global_id, self.width)
        cached = self._detail.get(key)
        if cached is None:
            cached = self._detail[key] = wrap_detail(detail_rows(se, self.events), max(self.width - 6, 10))
        return cached

    @property
    def line_count(self) -> int:
        return self._total

    def locate(self, y: int) -> tuple[int, int]:
        """(item index, line within the item) of view line y."""
        i = bisect.bisect_right(self._starts, y) - 1
        return i, y - self._starts[i]

    def span_of(self, gid: int) -> tuple[int, int] | None:
        """(first line, height) of an event, or None when it is filtered out."""
        i = self._index.get(gid)
        if i is None:
            return None
        return self._starts[i], self.height(self.items[i])

    # -- cursor -------------------------------------------------------------------------------
    @property
    def cursor_event(self) -> StoredEvent | None:
        if self.cursor_gid is None:
            return None
        i = self._index.get(self.cursor_gid)
        item = self.items[i] if i is not None else None
        return item if isinstance(item, StoredEvent) else None

    @property
    def visible_count(self) -> int:
        return len(self._order)

    def move(self, delta: int) -> None:
        """Move the cursor by `delta` events (headers are skipped); clamps at both ends."""
        order = self._order
        if not order:
            self.cursor_gid = None
            return
        pos = self._pos.get(self.cursor_gid) if self.cursor_gid is not None else None
        if pos is None:
            self.cursor_gid = order[-1] if delta >= 0 else order[0]
            return
        self.cursor_gid = order[max(0, min(len(order) - 1, pos + delta))]

    def home(self) -> None:
        self.cursor_gid = self._order[0] if self._order else None

    def end(self) -> None:
        self.cursor_gid = self._order[-1] if self._order else None

    def jump_to(self, gid: int) -> bool:
        """Put the cursor on an event if it is shown; True when it moved."""
        if gid in self._pos:
            self.cursor_gid = gid
            return True
        return False

    def select_line(self, y: int) -> None:
        if not self.items or y < 0 or y >= self._total:
            return
        i, _ = self.locate(y)
        item = self.items[i]
        if isinstance(item, StoredEvent):
            self.cursor_gid = item.global_id
        elif i + 1 < len(self.items):
            nxt = self.items[i + 1]
            if isinstance(nxt, StoredEvent):
                self.cursor_gid = nxt.global_id

    def toggle_expand(self) -> None:
        gid = self.cursor_gid
        if gid is None:
            return
        self.expanded.symmetric_difference_update({gid})
        self.relayout()

    def set_width(self, width: int) -> None:
        if width != self.width:
            self.width = width
            self._detail.clear()
            self.relayout()

    # -- compaction links ---------------------------------------------------------------------
    def replaced_by(self, se: StoredEvent) -> list[StoredEvent]:
        """The events of the same stream a ContextCompacted replaced (its `replaces_seq_range`)."""
        from zymi_tui.events import kinds as k  # loaded by the event itself (see line_of)

        d = se.event.kind
        if not isinstance(d, k.ContextCompacted):
            return []
        lo, hi = d.replaces_seq_range
        return [e for e in self.events if e.event.stream_id == se.event.stream_id and lo <= e.event.sequence <= hi]

    def is_marked(self, se: StoredEvent) -> bool:
        if self.mark is None:
            return False
        stream, lo, hi = self.mark
        return se.event.stream_id == stream and lo <= se.event.sequence <= hi


def clock(se: StoredEvent) -> str:
    return datetime.fromtimestamp(se.event.timestamp_ns / 1e9).strftime("%H:%M:%S")


def detail_rows(se: StoredEvent, context: list[StoredEvent]) -> list[tuple[str, str]]:
    """The full payload, plus for a compaction the list of events it replaced."""
    from zymi_tui.events import kinds as k  # loaded by the event itself (see EventsModel.line_of)
    from zymi_tui.events.describe import describe, full_detail

    rows = [("global id", str(se.global_id)), *full_detail(se.event)]
    d = se.event.kind
    if isinstance(d, k.ContextCompacted):
        lo, hi = d.replaces_seq_range
        replaced = [e for e in context if e.event.stream_id == se.event.stream_id and lo <= e.event.sequence <= hi]
        rows.append(("replaced", f"{len(replaced)} event(s), seq {lo}..={hi} (press g to jump to them)"))
        for e in replaced:
            line = describe(e.event)
            rows.append((f"  #{e.event.sequence}", f"{line.label}: {line.detail}"))
    return rows


def wrap_detail(rows: list[tuple[str, str]], width: int) -> list[str]:
    """`key: value` lines, display-safe, values wrapped at `width` terminal cells (never mid-grapheme)."""
    out: list[str] = []
    for key, value in rows:
        first = True
        for para in value.split("\n") or [""]:
            text = clean(f"{key}: {para}" if first else f"  {para}").expandtabs(4)
            first = False
            out += wrap_cells(text, width, "  ")
    return out
