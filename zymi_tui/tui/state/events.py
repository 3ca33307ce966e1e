"""The events list of the selected run: run stream plus step sub-streams, grouped, filtered, expandable.

Pure: no widgets, no IO. The view asks its `layout` for `line_count`, `locate(y)` and `items`; heights
depend on which events are expanded and on the width (expanded payloads wrap).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zymi_tui.events.store import IndexRow, step_of
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui.state.event_detail import detail_rows, wrap_detail
from zymi_tui.tui.state.event_search import matches
from zymi_tui.tui.state.events_layout import EventsLayout
from zymi_tui.tui.state.kind_codes import KindCodes
from zymi_tui.tui.state.run_index import Header, Items, RunIndex

if TYPE_CHECKING:
    from zymi_tui.events.describe import Line

RUN_GROUP = ""  # the group key of the run stream itself


__all__ = ["RUN_GROUP", "EventsModel", "Header", "index_row"]


@dataclass(slots=True)
class EventsModel:
    """Events of one run or turn, in global order, with the view state that survives live updates.

    `rows` is the run's index (global id, stream, sequence, kind tag: no payload); grouping, the kind
    and step filters, the cursor and the layout work on it alone. A run's decoded events are in
    `decoded`: every one of a small run; of a long (`sparse`) run only the windows drawn, read by the
    dashboard as the view asks for them (`missing`), at most `cache` of them kept.

    A long run is listed from its ids first; its rows' kinds come in a second read (`set_kinds`). Until
    then (`kinds_pending`) a row listed from the ids has no kind (`tag_of` is None unless it was read):
    a kind filter shows none of them rather than a part of them, and `kind_tags` offers none of theirs.

    The rows shown, grouped, are laid out in `layout` (its lines, the cursor's moves through it).
    """

    rows: RunIndex = field(default_factory=RunIndex)  # in columns: a tuple made for each row read
    decoded: dict[int, StoredEvent] = field(default_factory=dict)
    sparse: bool = False
    cache: int = 5000
    group_by_step: bool = True
    kinds: set[str] | None = None  # kind tags to show; None = all
    step: str | None = None  # RUN_GROUP, a step id, or None = all
    search: str = ""
    search_hits: set[int] | None = None  # sparse: the ids found so far matching `search` (a worker's answer)
    expanded: set[int] = field(default_factory=set)  # global ids
    width: int = 80
    cursor_gid: int | None = None  # the selected event (stable across updates)
    mark: tuple[str, int, int] | None = None  # (stream, lo, hi) highlighted: what a compaction replaced
    missing: set[int] = field(default_factory=set)  # sparse: ids drawn before they were decoded
    unreadable: set[int] = field(default_factory=set)  # sparse: ids the store could not decode (skipped)
    unkinded: int = 0  # sparse: rows up to this id were listed from the ids, their kinds not read yet (0: none)
    _lines: dict[int, Line] = field(default_factory=dict)
    _detail: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    layout: EventsLayout = field(init=False)  # of the rows shown

    def __post_init__(self) -> None:
        self.layout = EventsLayout(Items(self.rows))

    # -- data ---------------------------------------------------------------------------------
    def set_events(self, events: Iterable[StoredEvent]) -> None:
        """Every event of the run, decoded (a small run)."""
        events = list(events)
        self.sparse = False
        self.rows = RunIndex(index_row(se) for se in events)
        self.decoded = {se.global_id: se for se in events}
        self._reset_caches()
        self.relayout()

    def set_index(self, rows: RunIndex, decoded: Iterable[StoredEvent], *, kinds: bool = True) -> None:
        """A long run: its index, and the events already decoded (its newest page); `kinds=False`: the
        rows' kind tags are placeholders, their kinds to come (`set_kinds`)."""
        self.sparse = True
        self.rows = rows
        self.decoded = {}
        self._reset_caches()
        self.unkinded = 0 if kinds or not rows else rows[-1][0]
        self.add_decoded(decoded)
        self.relayout()

    def set_kinds(self, kinds: KindCodes) -> None:
        """The kind tags (by id) of the rows listed from the ids (rows added live since have theirs). The rows
        shown change only under a kind filter: without one the layout stands (laid out again, a million-event
        run's held a second layout beside the first: ~16 MB, the dashboard's peak RSS at 1M, issue 34)."""
        self.rows.retag(kinds.get)
        self.unkinded = 0
        if self.kinds is not None:
            self.relayout()

    @property
    def kinds_pending(self) -> bool:
        return self.unkinded > 0

    def tag_of(self, row: IndexRow) -> str | None:
        """A row's kind tag; None while it is not known (listed from the ids, not read yet)."""
        if row[0] > self.unkinded:
            return row[3]
        se = self.decoded.get(row[0])
        return None if se is None else se.event.tag

    def _reset_caches(self) -> None:
        self.unkinded = 0
        self._lines.clear()
        self._detail.clear()
        self.missing.clear()
        self.unreadable.clear()
        self.search_hits = None

    def add_decoded(self, events: Iterable[StoredEvent], asked: Iterable[int] = ()) -> bool:
        """Decoded events of a sparse run (a window the view asked for: `asked`, of which the rows the
        store could not decode are left out); True when an expanded one arrived (the layout changed)."""
        reflow = False
        self.missing.difference_update(asked)
        self.unreadable.update(asked)
        for se in events:
            self.decoded[se.global_id] = se
            self.unreadable.discard(se.global_id)
            reflow = reflow or se.global_id in self.expanded
        self._trim()
        if reflow:
            self._detail.clear()
            self.reflow()
        return reflow

    def _trim(self) -> None:
        """A sparse run keeps at most `cache` decoded events: the oldest read go (the cursor's and the
        expanded stay)."""
        if not self.sparse or len(self.decoded) <= self.cache:
            return
        keep = {self.cursor_gid, *self.expanded}
        for gid in list(self.decoded)[: len(self.decoded) - self.cache // 2]:
            if gid not in keep:
                del self.decoded[gid]
                self._lines.pop(gid, None)

    def append(self, events: Iterable[StoredEvent]) -> int:
        """Add newer events; returns how many were added (the layout is rebuilt, the cursor kept)."""
        added = list(events)
        if not added:
            return 0
        first = len(self.rows)
        self.rows.extend(index_row(se) for se in added)
        for se in added:
            self.decoded[se.global_id] = se
        needle = self.search.lower().strip()
        if self.sparse and needle and self.search_hits is not None:  # decoded already: searched here
            self.search_hits.update(se.global_id for se in added if matches(se, needle, self.line_of(se)))
        self._trim()
        self._extend(range(first, len(self.rows)))
        return len(added)

    def _extend(self, new: range) -> None:
        """Newer rows (by position) at the end of the list (flat order, or all of them in the last group) are
        added without laying the whole run out again: a live long run costs its new rows, not its length."""
        needle = self.search.lower().strip()
        rows = self.rows
        shown = [pos for pos in new if self._visible(rows.row(pos), needle)]
        if not shown:
            return
        if self.group_by_step:
            groups = {step_of(rows.stream(pos)) or RUN_GROUP for pos in shown}
            added = len(groups) == 1 and self.layout.extend(shown, groups.pop())
        else:
            added = self.layout.extend(shown, None)
        if not added:
            self.relayout()  # not all at the list's end (or in its last group): the rows below move
            return
        self.reflow()

    def event(self, gid: int) -> StoredEvent | None:
        """A decoded event, or None (a sparse run's row not read yet: the view asks for it)."""
        se = self.decoded.get(gid)
        if se is None and self.sparse and gid not in self.unreadable:
            self.missing.add(gid)
        return se

    def loaded(self) -> list[StoredEvent]:
        """The decoded events in global order: every event of a small run, the read windows of a long one."""
        rows = self.rows
        return [se for i in range(len(rows)) if (se := self.decoded.get(rows.gid(i))) is not None]

    def line_of(self, se: StoredEvent) -> Line:
        line = self._lines.get(se.global_id)
        if line is None:
            # how events read (and the kinds) load with the first event drawn, not the first frame
            from zymi_tui.events.describe import describe

            line = self._lines[se.global_id] = describe(se.event)
        return line

    @property
    def steps(self) -> list[str]:
        return list(dict.fromkeys(step_of(stream) or RUN_GROUP for stream in self.rows.streams()))

    @property
    def kind_tags(self) -> list[str]:
        return sorted({row[3] for row in self.rows if row[0] > self.unkinded})

    # -- filtering and layout -----------------------------------------------------------------
    def _visible(self, row: IndexRow, needle: str) -> bool:
        gid, stream, _, _ = row
        if self.kinds is not None and (gid <= self.unkinded or row[3] not in self.kinds):
            return False  # a row whose kind is not read yet is not shown as of any kind (not even if it was read)
        if self.step is not None and (step_of(stream) or RUN_GROUP) != self.step:
            return False
        if needle:
            if self.sparse:
                return self.search_hits is not None and gid in self.search_hits
            se = self.decoded[gid]
            return matches(se, needle, self.line_of(se))
        return True

    def relayout(self) -> None:
        needle = self.search.lower().strip()
        plain = not needle and self.kinds is None and self.step is None
        rows = self.rows
        shown: Iterable[int] = (
            range(len(rows)) if plain else [i for i in range(len(rows)) if self._visible(rows.row(i), needle)]
        )
        if self.group_by_step:
            groups: dict[str, array[int]] = {}  # each group's rows (positions, 4 bytes each as in `Items`)
            group_of: dict[str, array[int]] = {}  # per stream: one step_of a stream, not one a row
            for pos in shown:
                stream = rows.stream(pos)
                members = group_of.get(stream)
                if members is None:
                    members = group_of[stream] = groups.setdefault(step_of(stream) or RUN_GROUP, array("i"))
                members.append(pos)
            order = sorted(groups, key=lambda g: (g != RUN_GROUP, rows.gid(groups[g][0])))
            self.layout = EventsLayout.grouped(rows, ((g, groups[g]) for g in order))
        else:
            self.layout = EventsLayout.flat(rows, shown)
        if self.cursor_gid is not None and self.cursor_gid not in self.layout:
            self.cursor_gid = self.layout.nearest(self.cursor_gid)
        self.reflow()

    def reflow(self) -> None:
        """Where each expanded event starts and how many lines it adds (heights change, not the items)."""
        self.layout.reflow(self.expanded, self.height)

    def height(self, item: Header | IndexRow) -> int:
        if isinstance(item, Header) or item[0] not in self.expanded:
            return 1
        se = self.event(item[0])
        return 1 if se is None else 1 + len(self.detail_lines(se))

    def detail_lines(self, se: StoredEvent) -> list[str]:
        key = (se.global_id, self.width)
        cached = self._detail.get(key)
        if cached is None:
            replaced = [(row, self.event(row[0])) for row in self.replaced_by(se)]
            lines = wrap_detail(detail_rows(se, replaced), max(self.width - 6, 10))
            if all(e is not None for _, e in replaced):  # else drawn again once they are read
                self._detail[key] = lines
            return lines
        return cached

    # -- cursor -------------------------------------------------------------------------------
    @property
    def cursor_row(self) -> IndexRow | None:
        return None if self.cursor_gid is None else self.layout.row_of(self.cursor_gid)

    @property
    def cursor_event(self) -> StoredEvent | None:
        """The selected event, decoded (None while a sparse run's row is being read)."""
        row = self.cursor_row
        return None if row is None else self.event(row[0])

    def move(self, delta: int) -> None:
        """Move the cursor by `delta` events (headers are skipped); clamps at both ends."""
        self.cursor_gid = self.layout.moved(self.cursor_gid, delta)

    def home(self) -> None:
        self.cursor_gid = self.layout.first()

    def end(self) -> None:
        self.cursor_gid = self.layout.last()

    def jump_to(self, gid: int) -> bool:
        """Put the cursor on an event if it is shown; True when it moved."""
        if gid in self.layout:
            self.cursor_gid = gid
            return True
        return False

    def select_line(self, y: int) -> None:
        gid = self.layout.gid_on_line(y)
        if gid is not None:
            self.cursor_gid = gid

    def toggle_expand(self) -> None:
        gid = self.cursor_gid
        if gid is None:
            return
        self.expanded.symmetric_difference_update({gid})
        self.reflow()

    def set_width(self, width: int) -> None:
        if width != self.width:
            self.width = width
            self._detail.clear()
            self.reflow()

    # -- compaction links ---------------------------------------------------------------------
    def replaced_by(self, se: StoredEvent) -> list[IndexRow]:
        """The rows of the same stream a ContextCompacted replaced (its `replaces_seq_range`)."""
        from zymi_tui.events import kinds as k  # loaded by the event itself (see line_of)

        d = se.event.kind
        if not isinstance(d, k.ContextCompacted):
            return []
        lo, hi = d.replaces_seq_range
        stream = se.event.stream_id
        return [row for row in self.rows if row[1] == stream and lo <= row[2] <= hi]

    def is_marked(self, row: IndexRow) -> bool:
        if self.mark is None:
            return False
        stream, lo, hi = self.mark
        return row[1] == stream and lo <= row[2] <= hi


def index_row(se: StoredEvent) -> IndexRow:
    return (se.global_id, se.event.stream_id, se.event.sequence, se.event.tag)
