"""What the dashboard holds: the runs and events models, the selected run, what the workers found, and the
helpers every part of the screen reads them with (the base of the dashboard's layers, see __init__.py)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from textual.timer import Timer
from textual.worker import get_current_worker

from zymi_tui.events.store import EventReader, StoreError, run_of, step_of
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui.actions import ActionScreen
from zymi_tui.tui.chain_freshness import ChainFreshness, StartedCheck
from zymi_tui.tui.messages import FirstCheckDone, RowsSkipped, StoreTrouble
from zymi_tui.tui.model import RunKey, RunsModel
from zymi_tui.tui.source import FirstRuns
from zymi_tui.tui.state.events import EventsModel
from zymi_tui.tui.state.plot import CallCollector
from zymi_tui.tui.store_job import with_reader
from zymi_tui.tui.target import Target
from zymi_tui.tui.widgets import EventsList, RunsList

if TYPE_CHECKING:
    from zymi_tui.events.verify_process import CheckProcess

KIND_PRESETS: list[tuple[str, set[str] | None]] = [
    ("all kinds", None),
    ("LLM calls", {"llm_call_started", "llm_call_completed", "llm_call_failed", "context_compacted"}),
    ("tools", {"tool_call_requested", "tool_call_completed"}),
    ("workflow", {"pipeline_requested", "pipeline_completed", "workflow_started", "workflow_completed",
                  "workflow_node_started", "workflow_node_completed", "step_skipped", "output_resolved"}),
]  # fmt: skip
STATUS_CYCLE = [None, "ok", "FAIL", "running", "interrupted"]

CANCEL_POLL_S = 0.1  # how often a worker waiting for the first check looks at whether it was cancelled


class DashboardState(ActionScreen):
    """The dashboard's state; its layers (loaders, panels, selection, results, filters, search, launchers)
    each add one responsibility on top, and `MainScreen` (screen.py) is the last of them."""

    def __init__(self, target: Target, first: FirstRuns | None = None, check: StartedCheck | None = None) -> None:
        """`first`: the newest runs, read before the screen starts (drawn in its first frame); `check`: the
        store's first hash-chain check, started with the process (`verify_chains` waits for it)."""
        super().__init__()
        self.target = target
        self.first = first
        self.started_check = check
        self.runs = RunsModel()
        self.events = EventsModel()
        self.reader: EventReader | None = None
        self.selected: RunKey | None = None
        self.frozen = False
        self.held: list[StoredEvent] = []
        self.trouble: str | None = None
        self.turn_of: dict[str, str] = {}  # correlation id -> stream (for turns)
        self.broken: dict[str, str] = {}
        self.verified: int | None = None
        self.chain_freshness = ChainFreshness()
        self.chain_check: CheckProcess | None = None  # the last hash-chain check's process (ended on unmount)
        # set once the first check by a process (`checked_by_a_process`) has its verdict, or failed: what can
        # wait (the runs' peaks, foreign agents' steps) waits for it, so the two cores go to the check first
        self.first_check_done = threading.Event()
        self.index_after_check: RunKey | None = None  # a long run whose index waits for that check (`load_run`)
        # held by the read of a long run's index and by that of the runs' peaks (from before the first check's
        # verdict: they go first), which both wait for that verdict: read at once in two threads they left the
        # heap ~4 MB larger for good (long_1m: settled RSS 89.2 -> 93.4 MB)
        self.bulk_read = threading.Lock()
        self.pipeline_steps: dict[str, tuple[object, str | None]] = {}
        self.plot_dirty = False
        # the selected run is being read (not Textual's `loading`, which would cover the screen with dots)
        self.run_loading = False
        self.last_gid = 0
        # the project's knobs are read by `start`, after the first frame (their model loads pydantic and yaml)
        self.knob_source: str | None = None
        self.soft_cap = self.hard_cap = self.window = 0
        self.forget_after: int | None = None
        self.searching: str | None = None  # which list the search box filters
        self.runs_seen = False
        self.runs_complete = False  # the list holds every run (else the newest, the rest to follow)
        self.peaks_loaded = False
        self.bad_rows: dict[int, str] = {}
        self.runs_dirty = False
        self.pending_live: list[StoredEvent] = []
        self.masking: dict[str, int] = {}  # step -> first masked call (global id), from the replay
        self.masking_checked = False
        self.masking_stale = False
        self.select_timer: Timer | None = None
        self.chain_problem: str | None = None
        self.calls: CallCollector | None = None  # a long run's plot and graph figures (from a worker)
        self.calls_done = False
        self.pending_calls: list[StoredEvent] = []  # live events of a long run that came while it was collected
        self.searching_run = False  # a worker searches a long run's pages
        self.rows_wanted: set[int] = set()  # a long run's rows to read next (one read at a time)
        self.rows_busy = False

    def after_first_check(self) -> bool:
        """Wait (in a worker thread) until the first hash-chain check is done; False: the worker was cancelled."""
        worker = get_current_worker()
        while not self.first_check_done.wait(CANCEL_POLL_S):
            if worker.is_cancelled:
                return False
        return not worker.is_cancelled

    def first_check_over(self) -> None:
        """What waits for the first check by a process (or for none, on a store checked otherwise) may start."""
        self.first_check_done.set()
        self.post_message(FirstCheckDone())

    @contextmanager
    def one_bulk_read(self) -> Iterator[bool]:
        """`bulk_read` held (in a worker thread) while the block runs; False: the worker was cancelled first."""
        worker = get_current_worker()
        while not self.bulk_read.acquire(timeout=CANCEL_POLL_S):
            if worker.is_cancelled:
                yield False
                return
        try:
            yield not worker.is_cancelled
        finally:
            self.bulk_read.release()

    def in_thread(self, job: Callable[[EventReader], Awaitable[None]]) -> None:
        """Run `job` with a reader of its own in this worker thread (decoding never blocks the UI)."""

        try:
            with_reader(self.target.store, job, skipped=lambda rows: self.post_message(RowsSkipped(rows)))
        except StoreError as e:
            self.post_message(StoreTrouble(str(e)))

    def current_key(self) -> RunKey | None:
        runs_list = self.query_one(RunsList)
        i = runs_list.selected
        return self.runs.rows[i].key if i is not None and i < len(self.runs.rows) else None

    def step_streams(self) -> list[str]:
        return sorted({stream for _, stream, _, _ in self.events.rows if step_of(stream)})

    def collected(self) -> CallCollector | None:
        """The plot's and graph's figures: a long run's from its collector (None while the first pages are
        read), a small run's from its events."""
        if self.events.sparse:
            return self.calls
        collector = CallCollector(self.window, self.forget_after)
        collector.feed(self.events.loaded())
        return collector

    def _belongs(self, se: StoredEvent, key: RunKey) -> bool:
        if run_of(se.event.stream_id) != key.stream_id:
            return False
        if key.correlation_id is None:
            return True
        cid = se.event.correlation_id
        if cid is not None:
            return cid == key.correlation_id
        turns = [s for s in self.runs.summaries if s.stream_id == key.stream_id]
        return bool(turns) and max(turns, key=lambda s: s.turn).correlation_id == key.correlation_id

    def _cursor_screen_offset(self, view: EventsList) -> int | None:
        span = view.cursor_span()
        return None if span is None else span[0] - round(view.scroll_y)

    def _restore_cursor_offset(self, view: EventsList, before: int | None) -> None:
        span = view.cursor_span()
        if before is None or span is None:
            return
        target = span[0] - before
        if target != round(view.scroll_y):
            view.scroll_to(y=max(target, 0), animate=False, immediate=True)
