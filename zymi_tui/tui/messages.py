"""Messages the dashboard's workers post back to the UI thread."""

from __future__ import annotations

import threading

from textual.message import Message

from zymi_tui.events.runs import RunSummary
from zymi_tui.events.stored import BadRow, StoredEvent
from zymi_tui.tui.model import RunKey
from zymi_tui.tui.state.graph import StepDef
from zymi_tui.tui.state.kind_codes import KindCodes
from zymi_tui.tui.state.plot import CallCollector
from zymi_tui.tui.state.run_index import RunIndex


class RunsLoaded(Message):
    """Runs to list; `complete=False`: only the newest, the whole list follows."""

    def __init__(self, summaries: list[RunSummary], *, complete: bool = True) -> None:
        super().__init__()
        self.summaries = summaries
        self.complete = complete


class LivenessChecked(Message):
    """The runs listed as `before`, with those whose writer is gone now marked interrupted (`after`)."""

    def __init__(self, before: list[RunSummary], after: list[RunSummary]) -> None:
        super().__init__()
        self.before = before
        self.after = after


class PeaksLoaded(Message):
    def __init__(self, peaks: dict[RunKey, int]) -> None:
        super().__init__()
        self.peaks = peaks


class RunPage(Message):
    """A page of the selected run's events (`first` replaces what is shown, `last` ends the load)."""

    def __init__(self, key: RunKey, events: list[StoredEvent], first: bool, last: bool) -> None:
        super().__init__()
        self.key = key
        self.events = events
        self.first = first
        self.last = last


class TailBatch(Message):
    """Events another process committed since the last poll."""

    def __init__(self, events: list[StoredEvent]) -> None:
        super().__init__()
        self.events = events


class FirstCheckDone(Message):
    """The first hash-chain check by a process has its verdict, or failed: what waited for it can be read."""


class StoreTrouble(Message):
    """The store could not be read (deleted, damaged, locked): shown in the banner, never fatal."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ChainChecked(Message):
    def __init__(
        self, broken: dict[str, str], streams: int, damage: list[str], stamp: tuple[int, ...], took: float
    ) -> None:
        super().__init__()
        self.broken = broken  # run stream -> first problem
        self.streams = streams
        self.damage = damage  # what SQLite finds wrong with the store, one line each
        self.stamp = stamp  # the store's stamp when the check began (`chain_freshness`)
        self.took = took  # seconds the check took


class PipelineLoaded(Message):
    def __init__(self, key: RunKey, steps: list[StepDef] | None, problem: str | None) -> None:
        super().__init__()
        self.key = key
        self.steps = steps
        self.problem = problem


class RowsSkipped(Message):
    """Rows a worker could not decode (shown as a count in the banner; never fatal)."""

    def __init__(self, rows: list[BadRow]) -> None:
        super().__init__()
        self.rows = rows


class MaskingFound(Message):
    """Per step, the global id of the first LLM call whose rebuilt context has a masked message."""

    def __init__(self, key: RunKey, first_masked: dict[str, int]) -> None:
        super().__init__()
        self.key = key
        self.first_masked = first_masked


class RunIndexed(Message):
    """A long run's ids (every row without its data; the kind tags are placeholders, `RunKinds` brings
    them) and its newest events, decoded: the sparse list."""

    def __init__(self, key: RunKey, rows: RunIndex, newest: list[StoredEvent]) -> None:
        super().__init__()
        self.key = key
        self.rows = rows
        self.newest = newest


class RunKinds(Message):
    """The kind tag of every row of a long run listed from its ids, by id."""

    def __init__(self, key: RunKey, kinds: KindCodes) -> None:
        super().__init__()
        self.key = key
        self.kinds = kinds


class RunRows(Message):
    """Rows of a long run the events list asked for (`asked`; those not in `events` could not be read)."""

    def __init__(self, key: RunKey, events: list[StoredEvent], asked: list[int]) -> None:
        super().__init__()
        self.key = key
        self.events = events
        self.asked = asked


class CallsCollected(Message):
    """A long run's plot and graph figures, collected from its pages in a worker (`done`: the whole run)."""

    def __init__(self, key: RunKey, collector: CallCollector, done: bool, taken: threading.Event | None = None) -> None:
        super().__init__()
        self.key = key
        self.collector = collector
        self.done = done
        self.taken = taken  # set once handled: the worker sends its next copy only then (one in flight)


class SearchHits(Message):
    """The ids of a long run's events matching `needle`, found so far (`done`: every page searched)."""

    def __init__(self, key: RunKey, needle: str, hits: set[int], done: bool) -> None:
        super().__init__()
        self.key = key
        self.needle = needle
        self.hits = hits
        self.done = done


class EventRead(Message):
    """One event read for a screen that needs it whole (the inspector on a long run's call)."""

    def __init__(self, key: RunKey, event: StoredEvent | None) -> None:
        super().__init__()
        self.key = key
        self.event = event
