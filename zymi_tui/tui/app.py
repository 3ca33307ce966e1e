"""`zymi-tui observe`: runs, events (with step sub-streams), the context plot and pipeline graph, live."""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from zymi_tui.errors import UserError
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.runs import RUN_TAGS, RunSummary, list_runs, newest_runs, with_liveness
from zymi_tui.events.store import EventReader, IndexRow, StoreError, run_of, step_of
from zymi_tui.events.stored import StoredEvent
from zymi_tui.events.tail import tail
from zymi_tui.events.writers import store_writers
from zymi_tui.tui.actions import Act, ActionScreen
from zymi_tui.tui.base_app import SafeApp
from zymi_tui.tui.chain_freshness import ChainFreshness, store_stamp
from zymi_tui.tui.graph_view import GraphView
from zymi_tui.tui.help import DASHBOARD_NAV, DASHBOARD_PANELS
from zymi_tui.tui.lineage import lineage_text
from zymi_tui.tui.messages import (
    CallsCollected,
    ChainChecked,
    EventRead,
    LivenessChecked,
    MaskingFound,
    PeaksLoaded,
    PipelineLoaded,
    RowsSkipped,
    RunIndexed,
    RunKinds,
    RunPage,
    RunRows,
    RunsLoaded,
    SearchHits,
    StoreTrouble,
    TailBatch,
)
from zymi_tui.tui.model import RunKey, RunsModel, format_size
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.source import (
    AGENT_CAPS,
    FIRST_RUNS,
    FirstRuns,
    from_spans,
    knobs_of,
    peaks_of,
    read_peaks,
    read_run,
    store_from_spans,
)
from zymi_tui.tui.state.events import RUN_GROUP, EventsModel
from zymi_tui.tui.state.graph import build_graph, load_pipeline_steps
from zymi_tui.tui.state.plot import PLOT_TAGS, WORKFLOW_TAGS, CallCollector, StepCalls
from zymi_tui.tui.store_job import with_reader
from zymi_tui.tui.target import Target
from zymi_tui.tui.widgets import CursorList, EventsList, OnceFooter, RunsList

if TYPE_CHECKING:
    from zymi_tui.context.knobs import ContextKnobs

TAIL_POLL_S = 0.1
REDRAW_S = 0.25
LIVENESS_S = 2.0  # how often runs listed as running are checked for a live writer (events/writers.py)
SELECT_DELAY_S = 0.12
FIRST_PAGE = 200  # a run with more events shows its newest ones at once, then all of them
# A run of more events than this is shown from its index (ids first), its rows read as they are drawn;
# its plot, graph and search are made by workers reading its pages. ZYMI_TUI_SPARSE_EVENTS sets it
# (the tests lower it to take this path on a small store).
SPARSE_EVENTS = 5000
WINDOW_MARGIN = 120  # events read above and below the screen, ahead of scrolling
PAGE_IDS = 500  # rows a worker reads (and decodes) at a time
SEARCH_SHOWN_S = 0.5  # a long run's search shows the hits found so far at most this often
STATUS_CYCLE = [None, "ok", "FAIL", "running", "interrupted"]
KIND_PRESETS: list[tuple[str, set[str] | None]] = [
    ("all kinds", None),
    ("LLM calls", {"llm_call_started", "llm_call_completed", "llm_call_failed", "context_compacted"}),
    ("tools", {"tool_call_requested", "tool_call_completed"}),
    ("workflow", {"pipeline_requested", "pipeline_completed", "workflow_started", "workflow_completed",
                  "workflow_node_started", "workflow_node_completed", "step_skipped", "output_resolved"}),
]  # fmt: skip


JUMP_RETRIES = 20  # a run just created may take a few list reloads to appear


def sparse_threshold() -> int:
    return int(os.environ.get("ZYMI_TUI_SPARSE_EVENTS", SPARSE_EVENTS))


def _pages(gids: list[int]) -> Iterable[list[int]]:
    return (gids[i : i + PAGE_IDS] for i in range(0, len(gids), PAGE_IDS))


class MainScreen(ActionScreen):
    CSS_PATH = str(Path(__file__).with_name("main.tcss"))  # absolute: subclasses live in other folders
    AUTO_FOCUS = "#runs"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (80, "-normal"), (110, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS = [(0, "-short"), (24, "-tall")]  # noqa: RUF012
    HELP_TITLE = "zymi-tui observe"
    FAILURE_PANELS: ClassVar[dict[str, str]] = {"runs": "#runs", "run": "#events", "pipeline": "#graph"}
    HELP_INTRO = DASHBOARD_PANELS
    NAV = DASHBOARD_NAV
    ACTIONS: ClassVar[tuple[Act, ...]] = (
        Act("i", "inspect", "Inspect", "Open the context the selected LLM call saw, message by message.",
            "inspect inspector context messages layers call why"),
        Act("K", "tune", "Tune knobs", "Edit the context knobs and see what the picked call would have been.",
            "tune knobs what-if edit window cap profile apply"),
        Act("A", "advice", "Advice", "Findings on this store and the knobs to change, replayed on it; open the "
            "knob editor or fork a run with them.", "advice advise findings recommend signals cache"),
        Act("L", "life", "Message life", "Every Layer C message of the stream at every call: in full, masked, "
            "forgotten, compacted away; rent, find, what-if.", "life message grid rent masked forgotten compacted"),
        Act("X", "compare_profiles", "Profiles", "Replay the whole store under several profiles side by side.",
            "compare profiles profile replay cost chat coding"),
        Act("W", "sweep", "Sweep", "Replay a grid of window and soft-cap values; the Pareto front of cost vs peak.",
            "sweep grid pareto window cap"),
        Act("R", "fork", "Fork", "Fork the selected run at a step and re-run the rest under other knobs.",
            "fork resume rerun re-run branch step"),
        Act("C", "compare_fork", "Compare fork", "Compare a fork with its parent: figures, curves, answers.",
            "compare fork parent diff resume"),
        Act("P", "lineage", "Parent/fork", "Jump from a fork to its parent, or from a parent to its newest fork.",
            "parent fork lineage jump resume"),
        Act("d", "chat", "Chat", "Chat on this project (or a new demo project) with the curve beside it.",
            "chat demo conversation message talk"),
        Act("enter", "enter", "Open", "Runs: go to its events; events: expand the payload; plot: inspect the call.",
            "open expand payload details"),
        Act("slash", "search", "Search", "Search the focused list (runs or events); Esc clears.", "search find filter"),
        Act("s", "cycle_step", "Step", "Show one step's events and curve at a time (cycles).", "step filter"),
        Act("t", "cycle_kind", "Kinds", "Filter events by kind: all, LLM calls, tools, workflow.", "kind filter"),
        Act("u", "cycle_status", "Status", "Runs by status: all, ok, failed, running, interrupted.", "status filter"),
        Act("o", "toggle_group", "Group", "Events grouped by step, or flat in store order.", "group flat"),
        Act("g", "goto_replaced", "Replaced", "On a compaction: mark and go to the events it replaced.",
            "compaction replaced summary goto"),
        Act("x", "toggle_x", "x axis", "Plot against call number or seconds since the run started.",
            "plot axis time"),
        Act("f", "freeze", "Freeze", "Hold live updates (they are applied when you unfreeze).", "freeze pause live"),
        Act("n", "follow", "Follow", "Keep the newest run selected as new runs arrive.", "follow newest live"),
        Act("c", "copy_stream", "Copy id", "Copy the selected run's stream id (what resume and -r take).",
            "copy stream id clipboard"),
        Act("escape", "clear", "Clear", "Close the search, or clear the replaced-events mark.", "clear"),
        Act("q", "app.quit", "Quit", "Quit the dashboard.", "quit exit"),
        Act("ctrl+o", "export", "Export", "Write the selected run's LLM calls (LHAR, as `export --format lhar`) "
            "and this screen (SVG) into the export folder, both named in full.",
            "export save write lhar svg screenshot file"),
    )  # fmt: skip

    def __init__(self, target: Target, first: FirstRuns | None = None) -> None:
        """`first`: the newest runs, read before the screen starts (drawn in its first frame)."""
        super().__init__()
        self.target = target
        self.first = first
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

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # the size classes of the terminal as the screen opens: Textual sets them on the screen's first Resize,
        # which it handles after writing the first frame (then laid out for a large terminal, at any size)
        width, height = self.app.size
        for dimension, breakpoints in ((width, self.HORIZONTAL_BREAKPOINTS), (height, self.VERTICAL_BREAKPOINTS)):
            self.add_class(max((at, name) for at, name in breakpoints if dimension >= at)[1])
        banner = Static(id="banner")
        banner.styles.height = self.banner_height(width)  # fixed from the first frame: the panels never move
        yield banner
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield RunsList(self.runs, id="runs")
                yield Static(id="run-info")
                yield GraphView(id="graph")
            with Vertical(id="right"):
                yield Static(id="events-title")
                yield EventsList(self.events, id="events")
                yield ContextPlot(id="plot")
        yield OnceFooter()  # the search box is mounted above it when first asked for (`search_box`)

    async def on_mount(self) -> None:
        self.query_one("#runs").border_title = "Runs"
        self.query_one("#graph").border_title = "Pipeline"
        self.query_one("#events").border_title = "Events"
        self.query_one(RunsList).focus()
        self.set_interval(REDRAW_S, self._redraw_plot)
        self.set_interval(1.0, self._check_store_file)
        self.set_interval(LIVENESS_S, self._check_writers)
        if self.first is not None:
            self.bad_rows.update({b.global_id: b.describe() for b in self.first.skipped})
            self.show_runs(self.first.summaries, complete=self.first.whole)
        self.update_banner()
        # `zymi-tui observe` keeps the garbage collector off from its imports to the first frame (tui_cmds)
        self.call_after_refresh(gc.enable)
        self.call_after_refresh(self.start)  # the first frame is drawn before any worker competes with it

    async def on_unmount(self) -> None:
        """Stop the workers, then close the reader (its connection thread would keep the process alive)."""
        self.workers.cancel_node(self)
        if self.reader is not None:
            reader, self.reader = self.reader, None
            await reader.close()

    @work(exclusive=True, group="open", exit_on_error=False)
    async def start(self) -> None:
        knobs, source = await asyncio.to_thread(knobs_of, self.target.project)
        self.apply_knobs(knobs, source)
        first = self.first
        try:
            self.reader = await open_reader(self.target.store)
            # the live tail starts after the newest runs already drawn, if they were read before the start
            self.last_gid = first.last_global_id if first is not None else await self.reader.max_global_id()
        except StoreError as e:
            self.post_message(StoreTrouble(str(e)))
            return
        # the newest runs are drawn first, unless a run named on the command line is to be selected;
        # the hash-chain check starts once every run is drawn (show_runs)
        if first is None:
            self.reload_runs(newest_first=self.target.run is None)
        else:
            self.reload_runs(drawn=first)
        self.tail_store()
        if self.target.project is None:
            self.find_agent_steps()

    @work(thread=True, exclusive=True, group="agent", exit_on_error=False, description="foreign agents' steps")
    def find_agent_steps(self) -> None:
        """Without a project, a store `collect`/`import` wrote holds a foreign agent's calls: the banner
        then says whose caps they are (its own), not the engine defaults'."""

        async def job(reader: EventReader) -> None:
            if await store_from_spans(reader):
                self.app.call_from_thread(self.agent_caps)

        self.in_thread(job)

    def agent_caps(self) -> None:
        """The agent's own policy: nothing masked, forgotten or capped by zymi (no cap lines drawn)."""
        from zymi_tui.telemetry.spans_store import AGENT_OWN_KNOBS  # the knobs model (yaml): not before the first frame

        self.apply_knobs(AGENT_OWN_KNOBS, AGENT_CAPS)
        plot = self.query_one(ContextPlot)
        plot.soft_cap = plot.hard_cap = None

    def apply_knobs(self, knobs: ContextKnobs, source: str) -> None:
        self.soft_cap, self.hard_cap = knobs.soft_cap_chars, knobs.hard_cap_chars
        self.window, self.forget_after = knobs.observation_window, knobs.forget_after_turns
        self.knob_source = source
        plot = self.query_one(ContextPlot)
        plot.soft_cap, plot.hard_cap = self.soft_cap, self.hard_cap
        self.plot_dirty = True
        self._redraw_plot()  # with the caps
        self.update_banner()
        self.load_selected()

    def in_thread(self, job: Callable[[EventReader], Awaitable[None]]) -> None:
        """Run `job` with a reader of its own in this worker thread (decoding never blocks the UI)."""

        try:
            with_reader(self.target.store, job, skipped=lambda rows: self.post_message(RowsSkipped(rows)))
        except StoreError as e:
            self.post_message(StoreTrouble(str(e)))

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False, description="the runs list")
    def reload_runs(self, *, newest_first: bool = False, drawn: FirstRuns | None = None) -> None:
        """All runs; with `newest_first`, the newest screenful is read and drawn before the rest;
        `drawn`: that screenful is already drawn (then the rest is read, if it was not every run)."""

        async def job(reader: EventReader) -> None:
            page, whole = (drawn.summaries, drawn.whole) if drawn is not None else ([], False)
            if newest_first and drawn is None:
                page, whole = await newest_runs(reader, FIRST_RUNS, turns=True)
                if get_current_worker().is_cancelled:
                    return
                self.post_message(RunsLoaded(page, complete=whole))
            # the rest: read by the process that read the first runs (on another core), or here
            rest = drawn.rest() if drawn is not None and drawn.rest is not None and not whole else None
            if rest is not None:
                reader.problems.extend(rest.skipped)
            if whole:
                summaries = page
            else:
                summaries = rest.summaries if rest is not None else await list_runs(reader, turns=True)
                if get_current_worker().is_cancelled:
                    return
                self.post_message(RunsLoaded(summaries))
            turn_of = {s.correlation_id: s.stream_id for s in summaries if s.turns_on_stream > 1 and s.correlation_id}
            if not self.peaks_loaded:
                self.peaks_loaded = True
                async for peaks in read_peaks(reader, turn_of):
                    if get_current_worker().is_cancelled:
                        return
                    self.post_message(PeaksLoaded(peaks))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="verify", exit_on_error=False)
    def verify_chains(self) -> None:
        async def job(reader: EventReader) -> None:
            # the hash chains' module (and hashlib) load here, once every run is listed, not before the first frame
            from zymi_tui.events.verify import verify_store

            stamp = store_stamp(self.target.store, self.last_gid)  # before the first row is read
            began = time.monotonic()
            report = await verify_store(reader)
            broken: dict[str, str] = {}
            for v in report.verdicts:
                if not v.ok:
                    broken.setdefault(run_of(v.stream_id), f"{v.stream_id}: {v.problem}")
            took = time.monotonic() - began
            self.post_message(ChainChecked(broken, len(report.verdicts), report.damage, stamp, took))

        self.in_thread(job)

    @work(exclusive=True, group="tail", exit_on_error=False)
    async def tail_store(self) -> None:
        assert self.reader is not None
        path = (
            self.target.store.path if isinstance(self.target.store, SqliteStore) else None
        )  # a URL is never "deleted"
        try:
            async for batch in tail(self.reader, self.last_gid, poll_s=TAIL_POLL_S):
                self.post_message(TailBatch(batch))
                if path is not None and not path.exists():
                    break
        except StoreError as e:
            self.post_message(StoreTrouble(f"live updates stopped: {e}"))

    @work(thread=True, exclusive=True, group="run", exit_on_error=False, description="a run's index")
    def load_run(self, key: RunKey) -> None:
        async def job(reader: EventReader) -> None:
            if key.correlation_id is None:  # a long run: its newest events are shown while the rest loads
                head = await reader.newest(key.stream_id, FIRST_PAGE, include_steps=True)
                if len(head) == FIRST_PAGE and not get_current_worker().is_cancelled:
                    self.post_message(RunPage(key, head, True, False))
                ids = await reader.run_ids(key.stream_id)
                if len(ids) > sparse_threshold():  # ids first: the rows are read as they are drawn, the kinds next
                    rows = [(gid, stream, seq, "") for gid, stream, seq in ids]
                    if not get_current_worker().is_cancelled:
                        self.post_message(RunIndexed(key, rows, head))
                    return
            events = await read_run(reader, key)
            if not get_current_worker().is_cancelled:
                self.post_message(RunPage(key, events, True, True))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="kinds", exit_on_error=False, description="a run's kinds")
    def read_kinds(self, key: RunKey, rows: list[IndexRow]) -> None:
        """The kind of every row of a long run listed from its ids (the filters, pickers and plot need them)."""

        async def job(reader: EventReader) -> None:
            kinds = await reader.kinds_of([gid for gid, *_ in rows])
            if not get_current_worker().is_cancelled:
                self.post_message(RunKinds(key, kinds))

        self.in_thread(job)

    @work(thread=True, group="rows", exit_on_error=False, description="a page of events")
    def load_rows(self, key: RunKey, gids: list[int]) -> None:
        """Rows of a long run the events list drew before they were read."""

        async def job(reader: EventReader) -> None:
            self.post_message(RunRows(key, await reader.read_ids(gids), gids))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="collect", exit_on_error=False, description="a run's figures")
    def collect_run(self, key: RunKey, rows: list[IndexRow]) -> None:
        """A long run's plot and graph: its LLM-call, compaction and workflow rows read a page at a time
        (of a call only the fields drawn are decoded) and fed to a collector that keeps the calls, not the
        events). A row whose kind column names no known kind (an unknown or a hostile one) is read too: its
        data says what it is, as when a small run is read whole (and an unreadable one is counted)."""
        from zymi_tui.events.kinds import KIND_BY_TAG  # the kinds load with the first event decoded, not at start

        wanted = [gid for gid, _, _, tag in rows if tag in PLOT_TAGS or tag in WORKFLOW_TAGS or tag not in KIND_BY_TAG]

        async def job(reader: EventReader) -> None:
            collector = CallCollector(self.window, self.forget_after)
            worker = get_current_worker()
            first = await reader.read_ids([rows[0][0]]) if rows else []  # x = seconds since the run started
            collector.t0 = first[0].event.timestamp_ns if first else None
            for n, page in enumerate(_pages(wanted), 1):
                reader.problems += collector.feed_rows(await reader.read_id_rows(page))
                if worker.is_cancelled:
                    return
                if n % 20 == 0:  # the curve grows as it is read
                    self.post_message(CallsCollected(key, collector.snapshot(), False))
            collector.last_gid = max(collector.last_gid, rows[-1][0] if rows else 0)
            self.post_message(CallsCollected(key, collector, True))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False, description="a search in a run")
    def search_run(self, key: RunKey, needle: str, gids: list[int]) -> None:
        """A long run's events matching `needle`, found a page at a time (as the list's own search matches)."""
        from zymi_tui.tui.state.events import search_rows

        async def job(reader: EventReader) -> None:
            worker = get_current_worker()
            hits: set[int] = set()
            shown = 0.0  # the first hits are shown as soon as they are found
            for page in _pages(gids):
                found, bad = search_rows(await reader.read_id_rows(page), needle)
                hits.update(found)
                reader.problems += bad  # said in the banner when the search ends
                if worker.is_cancelled:
                    return
                if found and time.monotonic() - shown > SEARCH_SHOWN_S:  # each showing lays the whole list out
                    shown = time.monotonic()
                    self.post_message(SearchHits(key, needle, set(hits), False))
            self.post_message(SearchHits(key, needle, hits, True))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="event", exit_on_error=False, description="one event")
    def read_event(self, key: RunKey, gid: int) -> None:
        """One event of a long run read whole (the inspector opens on it)."""

        async def job(reader: EventReader) -> None:
            found = await reader.read_ids([gid])
            self.post_message(EventRead(key, found[0] if found else None))

        self.in_thread(job)

    @work(thread=True, exclusive=True, group="masking", exit_on_error=False, description="a run's masking")
    def find_masking(self, key: RunKey, streams: list[str]) -> None:
        """Replay the run's step streams with the context engine: where masking really starts."""
        from zymi_tui.replay.store_replay import replay_store
        from zymi_tui.tui.state.inspector import is_masked

        steps = {step_of(stream) or RUN_GROUP for stream in streams}

        async def job(reader: EventReader) -> None:
            first: dict[str, int] = {}
            async for row in replay_store(reader, project=self.target.project, streams=streams):
                if get_current_worker().is_cancelled:
                    return
                if row.is_compaction or row.simulated or row.rendered is None:
                    continue
                step = step_of(row.stream_id) or RUN_GROUP
                if step not in first and any(e.layer == "C" and is_masked(e) for e in row.rendered.entries):
                    first[step] = row.global_id
                    if len(first) == len(steps):  # every step's answer found: a long run is not replayed to its end
                        break
            self.post_message(MaskingFound(key, first))

        if self.target.project is not None:
            self.in_thread(job)

    @work(thread=True, exclusive=True, group="pipeline", exit_on_error=False, description="a pipeline's graph")
    def load_pipeline(self, key: RunKey, pipeline: str) -> None:
        try:
            steps = load_pipeline_steps(self.target.project, pipeline)
            self.post_message(PipelineLoaded(key, steps, None))
        except UserError as e:
            self.post_message(PipelineLoaded(key, None, e.one_line()))

    def _check_store_file(self) -> None:
        """One stat a second: a store deleted while open is said so (the tail sees no new rows); a
        store changed since its hash chains were checked is checked again."""
        self._recheck_chains_if_changed()
        if not isinstance(self.target.store, SqliteStore) or self.target.store.path.exists():
            return
        text = f"{self.target.store} was deleted: showing what was already loaded"
        if self.trouble != text:
            self.post_message(StoreTrouble(text))
            self.workers.cancel_group(self, "tail")

    def _check_writers(self) -> None:
        """A run listed as running whose writer is gone (`kill -9`: no end row will come) is shown
        interrupted within LIVENESS_S; only while one is listed, on a SQLite store."""
        if isinstance(self.target.store, SqliteStore) and any(s.status == "running" for s in self.runs.summaries):
            self.check_writers(self.target.store.path, self.runs.summaries)

    @work(thread=True, exclusive=True, group="writers", exit_on_error=False, description="the runs' writers")
    def check_writers(self, store: Path, before: list[RunSummary]) -> None:
        after = with_liveness(before, store_writers(store))
        if after != before:
            self.post_message(LivenessChecked(before, after))

    def on_liveness_checked(self, msg: LivenessChecked) -> None:
        if self.runs.summaries is msg.before:  # else the list was read again meanwhile, liveness with it
            self.show_runs(msg.after, complete=self.runs_complete)

    def _recheck_chains_if_changed(self) -> None:
        was_stale = self.chain_freshness.stale
        due = self.chain_freshness.recheck_now(store_stamp(self.target.store, self.last_gid))
        if self.chain_freshness.stale and not was_stale:
            self.update_banner()
            self.update_run_info()
        if due and not any(w.group == "verify" and w.is_running for w in self.workers):
            self.verify_chains()

    def worker_failed(self, group: str, line: str) -> None:
        if group == "run":
            self.run_loading = False
            self.update_events_title()
        elif group == "rows":
            self.rows_busy = False
        elif group == "kinds":  # the filters stay waiting; the failure is said in the banner
            self.trouble = line
        elif group == "search":
            self.searching_run = False
            self.update_events_title()
        elif group == "verify":
            self.chain_problem = line
        elif group == "masking":  # the estimate from W stays on the plot; its legend says why it is not rebuilt
            plot = self.query_one(ContextPlot)
            plot.masking_problem = line
            plot.replot()
        if group in ("open", "verify", "tail", "runs"):
            self.trouble = line
        self.update_banner()

    # -- messages from workers ----------------------------------------------------------------
    def on_runs_loaded(self, msg: RunsLoaded) -> None:
        self.show_runs(msg.summaries, complete=msg.complete)

    def show_runs(self, summaries: list[RunSummary], *, complete: bool) -> None:
        """List `summaries` (`complete`: every run; else the newest, the rest to follow), the cursor kept."""
        runs_list = self.query_one(RunsList)
        keep = self.current_key()
        self.turn_of = {s.correlation_id: s.stream_id for s in summaries
                        if s.turns_on_stream > 1 and s.correlation_id}  # fmt: skip
        self.runs.set_runs(summaries)
        for stream in self.broken:
            self.runs.mark_broken(stream)
        if self.runs.follow_newest or keep is None:
            index = 0
            if keep is None and self.target.run:
                found = self.runs.find_stream(self.target.run)
                if found is None:
                    self.notify(f"no run with stream id {self.target.run}; showing the newest", severity="warning")
                index = found or 0
        else:
            index = self.runs.index_of(keep) or 0 if keep is not None else 0
        runs_list.cursor = min(index, max(len(self.runs.rows) - 1, 0))
        runs_list.update_size()
        runs_list.reveal_cursor()
        count = len(self.runs.summaries)
        self.query_one("#runs").border_title = f"Runs ({count})" if complete else f"Runs (newest {count}…)"
        self.runs_complete = complete
        self.select_current()
        self.update_banner()
        if complete and not self.runs_seen:
            self.runs_seen = True
            runs_list.focus()  # start in the runs list (an early Hide during the first layout can move focus)
            self.verify_chains()  # after the runs, so hashing the store does not delay drawing them

    def on_peaks_loaded(self, msg: PeaksLoaded) -> None:
        for key, chars in msg.peaks.items():
            self.runs.set_peak(key, chars)
        self.query_one(RunsList).refresh()
        self.update_run_info()

    def on_chain_checked(self, msg: ChainChecked) -> None:
        self.broken = msg.broken
        self.verified = msg.streams
        self.chain_freshness.landed(msg.stamp, msg.damage, msg.took)
        for stream in msg.broken:
            self.runs.mark_broken(stream)
        self.query_one(RunsList).refresh()
        self.update_run_info()
        self.update_banner()

    def on_rows_skipped(self, msg: RowsSkipped) -> None:
        for bad in msg.rows:
            self.bad_rows[bad.global_id] = bad.describe()
        self.update_banner()

    def on_store_trouble(self, msg: StoreTrouble) -> None:
        if msg.text != self.trouble:
            self.notify(msg.text, severity="error", timeout=10)
        self.trouble = msg.text
        self.update_banner()

    def on_run_page(self, msg: RunPage) -> None:
        if msg.key != self.selected:
            return
        view = self.query_one(EventsList)
        view.problem = None
        if msg.first:
            self.events.cursor_gid = None
            self.events.expanded.clear()
            self.events.mark = None
            self.events.set_events(msg.events)
        else:
            self.events.append(msg.events)
        if msg.last:
            self._loaded()
            streams = self.step_streams()
            if streams:
                self.find_masking(msg.key, streams)
            view.update_size()
            view.reveal_cursor()
            self.refresh_derived(new_run=True)
        else:
            view.update_size()
        self.update_events_title()

    def step_streams(self) -> list[str]:
        return sorted({stream for _, stream, _, _ in self.events.rows if step_of(stream)})

    def _loaded(self) -> None:
        """The selected run is in the model (whole, or its index): live events held meanwhile are added."""
        rows = self.events.rows
        loaded = rows[-1][0] if rows else 0
        late = [se for se in self.pending_live if se.global_id > loaded]
        self.pending_live.clear()
        if late:
            self.events.append(late)
        self.run_loading = False
        self.masking = {}
        self.events.end()

    def on_run_indexed(self, msg: RunIndexed) -> None:
        if msg.key != self.selected:
            return
        view = self.query_one(EventsList)
        view.problem = None
        self.events.cursor_gid = None
        self.events.expanded.clear()
        self.events.mark = None
        self.events.set_index(msg.rows, msg.newest, kinds=False)
        self.calls, self.calls_done = None, False
        self.pending_calls = []
        self.rows_wanted.clear()
        self._loaded()
        view.update_size()
        view.reveal_cursor()
        self.refresh_derived(new_run=True)
        self.update_events_title()
        self.call_after_refresh(self.read_kinds, msg.key, list(msg.rows))  # once the list is on screen

    def on_run_kinds(self, msg: RunKinds) -> None:
        if msg.key != self.selected or not self.events.sparse:
            return
        view = self.query_one(EventsList)
        before = self._cursor_screen_offset(view)
        self.events.set_kinds(msg.kinds)
        if self.events.cursor_row is None:  # a kind filter chosen meanwhile
            self.events.end()
        view.update_size()
        self._restore_cursor_offset(view, before)
        view.reveal_cursor()
        view.refresh()
        self.update_events_title()
        self.collect_run(msg.key, list(self.events.rows))

    @on(EventsList.NeedRows)
    def need_rows(self, msg: EventsList.NeedRows) -> None:
        if self.selected is None or not self.events.sparse:
            return
        view = self.query_one(EventsList)
        self.rows_wanted.update(msg.gids, view.visible_gids(WINDOW_MARGIN))
        self.rows_wanted.difference_update(self.events.decoded)
        self.events.missing.clear()
        self._read_rows()

    def _read_rows(self) -> None:
        if self.rows_busy or not self.rows_wanted or self.selected is None:
            return
        self.rows_busy = True
        gids, self.rows_wanted = sorted(self.rows_wanted), set()
        self.load_rows(self.selected, gids)

    def on_run_rows(self, msg: RunRows) -> None:
        self.rows_busy = False
        if msg.key == self.selected and self.events.sparse:
            view = self.query_one(EventsList)
            before = self._cursor_screen_offset(view)
            if self.events.add_decoded(msg.events, msg.asked):
                view.update_size()
                self._restore_cursor_offset(view, before)
            view.refresh()
            self._read_rows()
        else:
            self.rows_wanted.clear()

    def on_calls_collected(self, msg: CallsCollected) -> None:
        if msg.key != self.selected or not self.events.sparse:
            return
        self.calls, self.calls_done = msg.collector, msg.done
        if msg.done:
            late, self.pending_calls = [se for se in self.pending_calls if se.global_id > msg.collector.last_gid], []
            msg.collector.feed(late)
            streams = self.step_streams()
            if streams:
                self.find_masking(msg.key, streams)
        self.refresh_derived(new_run=True)

    def on_search_hits(self, msg: SearchHits) -> None:
        if msg.key != self.selected or not self.events.sparse or msg.needle != self.events.search.lower().strip():
            return
        self.searching_run = not msg.done
        self.events.search_hits = msg.hits
        self._relayout_events()

    def on_event_read(self, msg: EventRead) -> None:
        if msg.key != self.selected:
            return
        if msg.event is None:
            self.notify("that LLM call's row could not be read (see the banner)", severity="warning")
            return
        self._open_inspector(msg.event)

    def on_masking_found(self, msg: MaskingFound) -> None:
        if msg.key == self.selected:
            self.masking = msg.first_masked
            self.masking_checked = True
            self.plot_dirty = True

    def on_pipeline_loaded(self, msg: PipelineLoaded) -> None:
        if msg.key == self.selected:
            self.pipeline_steps[str(msg.key)] = (msg.steps, msg.problem)
            self.refresh_graph()

    def on_tail_batch(self, msg: TailBatch) -> None:
        if self.frozen:
            self.held.extend(msg.events)
            self.update_banner()
            return
        self.apply_live(msg.events)

    def apply_live(self, batch: list[StoredEvent]) -> None:
        if not batch:
            return
        if self.target.project is None and self.knob_source != AGENT_CAPS and any(map(from_spans, batch)):
            self.agent_caps()
        self.last_gid = max(self.last_gid, batch[-1].global_id)
        if any(se.event.tag in RUN_TAGS for se in batch):
            self.runs_dirty = True  # reloaded by the redraw timer, at most 4 times a second
        peaks = peaks_of(batch, self.turn_of)
        for run_key, chars in peaks.items():
            self.runs.set_peak(run_key, chars)
        if peaks:
            self.query_one(RunsList).refresh()
        key = self.selected
        if key is None:
            return
        mine = [se for se in batch if self._belongs(se, key)]
        if mine and not self.run_loading and self.events.rows:
            # a tail batch read before the run's load but handed over after it: rows the load has
            # (a run written while it is selected: an agent's spans arriving through `collect`)
            loaded = self.events.rows[-1][0]
            mine = [se for se in mine if se.global_id > loaded]
        if mine and self.run_loading:
            self.pending_live.extend(mine)  # merged when the load lands (it may or may not include them)
        elif mine:
            if any(se.event.tag == "llm_call_started" for se in mine):
                self.masking_stale = True
            view = self.query_one(EventsList)
            before = self._cursor_screen_offset(view)
            self.events.append(mine)
            if self.events.sparse:  # the collector takes them once it has read the run
                if self.calls is not None and self.calls_done:
                    self.calls.feed(mine)
                else:
                    self.pending_calls.extend(mine)
            view.update_size()
            self._restore_cursor_offset(view, before)
            self.update_events_title()
            self.refresh_derived(new_run=False)

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

    # -- selection ----------------------------------------------------------------------------
    def current_key(self) -> RunKey | None:
        runs_list = self.query_one(RunsList)
        i = runs_list.selected
        return self.runs.rows[i].key if i is not None and i < len(self.runs.rows) else None

    def jump_to_run(self, stream_id: str, tries: int = JUMP_RETRIES) -> None:
        """Select a run in the list; a run just created may need the list to reload first."""
        index = self.runs.find_stream(stream_id)
        if index is None:
            if tries == JUMP_RETRIES:
                self.reload_runs()
            if tries > 0:
                self.set_timer(0.2, lambda: self.jump_to_run(stream_id, tries - 1))
            else:
                self.notify(f"{stream_id} is not in the runs list (a filter may hide it)", severity="warning")
            return
        runs_list = self.query_one(RunsList)
        runs_list.cursor = index
        runs_list.cursor_changed()
        runs_list.reveal_cursor()

    def select_current(self) -> None:
        key = self.current_key()
        self.update_run_info()
        if key == self.selected:
            return
        self.selected = key
        self.run_loading = key is not None
        self.pending_live.clear()
        self.masking, self.masking_checked = {}, False
        self.calls, self.calls_done, self.pending_calls = None, False, []
        self.searching_run = False
        self.query_one(ContextPlot).picked = None
        if key is None:
            self.events.set_events([])
            self.query_one(EventsList).update_size()
            self.refresh_derived(new_run=True)
            self.update_events_title()
            return
        self.update_events_title()
        self.load_selected()

    def load_selected(self) -> None:
        """Read the selected run and its pipeline, once the knobs are known (its plot and graph use them);
        the first selection is read when `start` has read them, after the first frame."""
        key = self.selected
        if key is None or self.knob_source is None:
            return
        self.load_run(key)
        index = self.runs.index_of(key)
        if index is not None and str(key) not in self.pipeline_steps:
            self.load_pipeline(key, self.runs.rows[index].summary.pipeline)

    @on(CursorList.Moved, "#runs")
    def runs_moved(self) -> None:
        """Load the run once the cursor rests (holding j through 1,000 runs loads one run, not 1,000)."""
        self.update_run_info()
        if self.select_timer is not None:
            self.select_timer.stop()
        self.select_timer = self.set_timer(SELECT_DELAY_S, self.select_current)

    @on(CursorList.Moved, "#events")
    def events_moved(self) -> None:
        row = self.events.cursor_row
        plot = self.query_one(ContextPlot)
        if row is not None and self.events.tag_of(row) == "llm_call_started":
            call = next((c for c in plot.all_calls() if c.global_id == row[0]), None)
            if call is not None:
                plot.pick(call)

    @on(ContextPlot.CallPicked)
    def call_picked(self, msg: ContextPlot.CallPicked) -> None:
        if msg.call is not None and self.events.jump_to(msg.call.global_id):
            view = self.query_one(EventsList)
            view.reveal_cursor()
            view.refresh()

    # -- derived views ------------------------------------------------------------------------
    def refresh_derived(self, new_run: bool) -> None:
        self.plot_dirty = True
        if new_run:
            self._redraw_plot()
        self.refresh_graph()

    def _redraw_plot(self) -> None:
        if self.runs_dirty and not any(w.group == "runs" and w.is_running for w in self.workers):
            self.runs_dirty = False
            self.reload_runs()
        if (
            self.masking_stale
            and self.selected
            and not any(w.group == "masking" and w.is_running for w in self.workers)
        ):
            self.masking_stale = False
            self.find_masking(self.selected, self.step_streams())
        if not self.plot_dirty:
            return
        self.plot_dirty = False
        plot = self.query_one(ContextPlot)
        collected = self.collected()
        steps: dict[str, StepCalls] = {}
        for name, sc in (collected.steps if collected is not None else {}).items():
            steps[name] = sc = replace(sc)  # the collector keeps its estimate; the plot shows the best answer
            if self.masking_checked:  # the context engine's answer replaces the estimate
                gid = self.masking.get(name)
                index = next((c.index for c in sc.calls if c.global_id == gid), None)
                sc.masking_from, sc.masking_exact = index, True
        t0 = collected.t0 if collected is not None and collected.t0 is not None else 0
        plot.step = self.events.step
        plot.set_data(steps, t0, reading=self.run_loading or (self.events.sparse and not self.calls_done))

    def collected(self) -> CallCollector | None:
        """The plot's and graph's figures: a long run's from its collector (None while the first pages are
        read), a small run's from its events."""
        if self.events.sparse:
            return self.calls
        collector = CallCollector(self.window, self.forget_after)
        collector.feed(self.events.loaded())
        return collector

    def refresh_graph(self) -> None:
        graph_view = self.query_one(GraphView)
        key = self.selected
        if key is None:
            graph_view.show(None)
            return
        row = next((r for r in self.runs.rows if r.key == key), None)
        if row is None:
            return
        loaded = self.pipeline_steps.get(str(key))
        if loaded is None:
            graph_view.show(None, "loading pipeline…")
            return
        steps, problem = loaded
        collected = self.collected()
        if collected is None:
            graph_view.show(None, "reading the run's calls…")
            return
        graph = build_graph(row.summary.pipeline, steps, problem, collected.workflow, collected.steps)  # type: ignore[arg-type]
        graph_view.show(graph)

    def update_run_info(self) -> None:
        key = self.current_key()
        info = self.query_one("#run-info", Static)
        if key is None:
            info.update("")
            return
        row = self.runs.rows[self.query_one(RunsList).cursor]
        s = row.summary
        t = Text()
        t.append(clean(s.stream_id), style="bold")
        if row.is_turn:
            t.append(f"  turn {s.turn}/{row.turns}")
        t.append(f"  {s.status}")
        if row.peak_chars is not None:
            t.append(f"  peak {format_size(row.peak_chars)}")
        chain = self.broken.get(key.stream_id)
        if chain:
            t.append("\n" + clean(f"⚠ hash chain does not verify: {chain}", one_line=True), style="bold red")
        elif self.verified is not None and not self.chain_freshness.stale and not self.chain_freshness.damage:
            t.append("  chain ✓", style="green")
        if s.error:
            t.append("\n" + clean(f"error: {s.error}", one_line=True, max_cells=200), style="red")
        t.append_text(lineage_text(self.runs, s))
        info.update(t)

    def update_events_title(self) -> None:
        m = self.events
        parts = [f"{m.visible_count}/{len(m.rows)} events"]
        if m.step is not None:
            parts.append("run stream" if m.step == RUN_GROUP else f"step {m.step}")
        kinds = next((name for name, tags in KIND_PRESETS if tags == m.kinds), "custom kinds")
        if m.kinds is not None:
            parts.append(kinds)
        if m.search:
            parts.append(f"search “{m.search}”" + (" (searching…)" if self.searching_run else ""))
        if self.run_loading:
            parts.append("loading…")
        elif m.kinds_pending:
            parts.append("reading kinds…")
        self.query_one("#events").border_title = safe_text("Events · " + " · ".join(parts), one_line=True)
        self.query_one("#events-title", Static).display = False

    def _chain_banner(self) -> list[tuple[str, str]]:
        """What the banner says of the last hash-chain check, and whether it still holds."""
        fresh = self.chain_freshness
        again = ", the store changed since: checking again…" if fresh.stale else ""
        parts: list[tuple[str, str]] = []
        if fresh.damage:
            found = f" · the store is damaged ({len(fresh.damage)} finding(s)): {fresh.damage[0]}{again}"
            parts.append((clean(found, one_line=True, max_cells=200), "bold red"))
        if self.broken:
            parts.append((f" · {len(self.broken)} run(s) fail the hash-chain check{again}", "bold red"))
        elif self.chain_problem is not None:
            parts.append((" · hash chains not checked (see the notification)", "yellow"))
        elif self.verified is None:
            parts.append((" · checking hash chains…", "dim"))
        elif fresh.stale:
            changed = f" · the store changed since {self.verified} stream(s) were verified: checking again…"
            parts.append((changed, "yellow"))
        elif not fresh.damage:
            parts.append((f" · {self.verified} stream(s) verified", "dim"))
        return parts

    def banner_height(self, width: int) -> int:
        """The lines the banner needs to show a banner sentence (the sample store's) whole, with the state
        after it (about 70 cells); 1 for a store's path."""
        if not self.target.banner:
            return 1
        return max(1, min(4, -(-(cell_len(self.target.banner) + 70) // max(width - 2, 20))))

    def update_banner(self) -> None:
        parts: list[tuple[str, str]] = []
        if self.target.banner:
            parts.append((self.target.banner, "bold"))
        else:
            parts.append((f"store {self.target.store}", ""))
        parts.append((" · FROZEN" + (f" ({len(self.held)} new held)" if self.held else "") if self.frozen else
                      " · live", "bold yellow" if self.frozen else "green"))  # fmt: skip
        if self.runs.follow_newest:
            parts.append((" · following newest run", "cyan"))
        parts += self._chain_banner()
        if self.reader is not None:
            self.bad_rows.update({b.global_id: b.describe() for b in self.reader.problems})
        if self.bad_rows:
            parts.append((f" · {len(self.bad_rows)} unreadable row(s) skipped", "yellow"))
        parts.append((f" · caps: {self.knob_source or 'reading the project…'}", "dim"))
        if self.size.width < 80 or self.size.height < 24:
            parts.insert(0, (f"terminal {self.size.width}x{self.size.height}: graph and plot hidden (80x24 shows "
                             "them) · ", "yellow"))  # fmt: skip
        if self.trouble:
            parts.insert(0, (f"⚠ {self.trouble} · ", "bold red"))

        def spaced(text: str) -> str:  # the separators' spaces survive the cleaning (it trims them)
            core = clean(text, one_line=True)
            return (" " if text[:1] == " " else "") + core.strip(" ") + (" " if text[-1:] == " " else "")

        self.query_one("#banner", Static).update(Text.assemble(*((spaced(text), style) for text, style in parts)))

    def on_resize(self) -> None:
        self.query_one("#banner", Static).styles.height = self.banner_height(self.size.width)
        self.update_banner()

    # -- actions ------------------------------------------------------------------------------
    def action_enter(self) -> None:
        focused = self.focused
        if isinstance(focused, RunsList):
            self.query_one(EventsList).focus()
        elif isinstance(focused, EventsList):
            self.toggle_expand()
        elif isinstance(focused, ContextPlot):
            self.action_inspect()

    def toggle_expand(self) -> None:
        view = self.query_one(EventsList)
        before = self._cursor_screen_offset(view)
        self.events.toggle_expand()
        view.update_size()
        self._restore_cursor_offset(view, before)
        view.reveal_cursor()

    def action_freeze(self) -> None:
        self.frozen = not self.frozen
        if not self.frozen and self.held:
            held, self.held = self.held, []
            self.apply_live(held)
        self.update_banner()

    def action_follow(self) -> None:
        self.runs.follow_newest = not self.runs.follow_newest
        if self.runs.follow_newest and self.runs.rows:
            runs_list = self.query_one(RunsList)
            runs_list.cursor = 0
            runs_list.cursor_changed()
        self.update_banner()

    async def search_box(self) -> Input:
        """The search box, mounted (above the footer) the first time it is asked for: hidden until then, it is not
        made, styled and laid out before the first frame."""
        found = self.query("#search")
        if found:
            return found.only_one(Input)
        box = Input(placeholder="search (Enter to apply, Esc to clear)", id="search", disabled=True)
        await self.mount(box, before=self.query_one(OnceFooter))
        return box

    async def action_search(self) -> None:
        box = await self.search_box()
        self.searching = "runs" if isinstance(self.focused, RunsList) else "events"
        box.placeholder = f"search {self.searching} (Enter to apply, Esc to clear)"
        box.value = self.runs.search if self.searching == "runs" else self.events.search
        box.display = True
        box.disabled = False
        box.focus()

    @on(Input.Submitted, "#search")
    def search_submitted(self, msg: Input.Submitted) -> None:
        self.apply_search(msg.value)
        msg.input.display = False
        msg.input.disabled = True
        self.query_one(RunsList if self.searching == "runs" else EventsList).focus()

    def apply_search(self, text: str) -> None:
        if self.searching == "runs":
            self.runs.search = text
            self._rebuild_runs()
        else:
            self.events.search = text
            needle = text.lower().strip()
            if self.events.sparse and needle and self.selected is not None:  # a worker reads the pages
                self.events.search_hits = set()
                self.searching_run = True
                self.search_run(self.selected, needle, [gid for gid, *_ in self.events.rows])
            elif self.searching_run:
                self.searching_run = False
                self.workers.cancel_group(self, "search")
            self._relayout_events()

    def _rebuild_runs(self) -> None:
        keep = self.selected
        self.runs.rebuild()
        runs_list = self.query_one(RunsList)
        index = self.runs.index_of(keep) if keep else None
        runs_list.cursor = index if index is not None else 0
        runs_list.update_size()
        runs_list.reveal_cursor()
        self.select_current()

    def _relayout_events(self) -> None:
        self.events.relayout()
        if self.events.cursor_event is None:
            self.events.end()
        view = self.query_one(EventsList)
        view.update_size()
        view.reveal_cursor()
        self.update_events_title()

    def action_clear(self) -> None:
        box = next(iter(self.query("#search").results(Input)), None)
        if box is not None and box.display:
            box.display = False
            box.disabled = True
            self.apply_search("")
            self.query_one(RunsList if self.searching == "runs" else EventsList).focus()
        elif self.events.mark is not None:
            self.events.mark = None
            self.query_one(EventsList).refresh()

    def action_cycle_step(self) -> None:
        steps: list[str | None] = [None, *self.events.steps]
        i = steps.index(self.events.step) if self.events.step in steps else 0
        self.set_step(steps[(i + 1) % len(steps)])

    def set_step(self, step: str | None) -> None:
        self.events.step = step
        self._relayout_events()
        plot = self.query_one(ContextPlot)
        plot.step = step
        plot.replot()

    def action_cycle_kind(self) -> None:
        names = [tags for _, tags in KIND_PRESETS]
        i = names.index(self.events.kinds) if self.events.kinds in names else 0
        self.set_kinds(names[(i + 1) % len(names)])

    def set_kinds(self, kinds: set[str] | None) -> None:
        self.events.kinds = kinds
        self._relayout_events()

    def action_cycle_status(self) -> None:
        i = STATUS_CYCLE.index(self.runs.status_filter)
        self.runs.status_filter = STATUS_CYCLE[(i + 1) % len(STATUS_CYCLE)]
        self._rebuild_runs()
        self.notify(f"runs: {self.runs.status_filter or 'all statuses'}")

    def action_toggle_group(self) -> None:
        self.events.group_by_step = not self.events.group_by_step
        self._relayout_events()

    def action_goto_replaced(self) -> None:
        se = self.events.cursor_event
        replaced = self.events.replaced_by(se) if se is not None else []
        if se is None or not replaced:
            self.notify("select a ContextCompacted event to jump to the events it replaced")
            return
        lo, hi = se.event.kind.replaces_seq_range  # type: ignore[union-attr]
        self.events.mark = (se.event.stream_id, lo, hi)
        if self.events.jump_to(replaced[0][0]):
            view = self.query_one(EventsList)
            view.reveal_cursor()
            view.refresh()
        self.notify(f"{len(replaced)} replaced event(s) marked ┃ (Esc clears)")

    def action_inspect(self) -> None:
        plot = self.query_one(ContextPlot)
        call = plot.picked
        if call is None and plot.all_calls():  # nothing picked: the call the plot's title names ("last #N")
            call = plot.all_calls()[-1]
        gid = call.global_id if call is not None else None
        row = self.events.cursor_row
        if row is not None and self.events.tag_of(row) == "llm_call_started":
            gid = row[0]
        if gid is None or self.selected is None:
            self.notify("select an LLM call (in the events list or on the plot) to inspect its context")
            return
        target = self.events.decoded.get(gid)
        if target is None:  # a long run's call not read yet
            self.read_event(self.selected, gid)
            return
        self._open_inspector(target)

    def _open_inspector(self, target: StoredEvent) -> None:
        from zymi_tui.tui.inspector import InspectorScreen

        self.app.push_screen(InspectorScreen(target, self.target.store, self.target.project))

    # -- tuning hook: the screens live in zymi_tui/tui/tuning ------------------------------------
    def action_tune(self) -> None:
        from zymi_tui.tui.tuning.hooks import open_editor

        if self.events.kinds_pending:  # the editor picks among the run's calls
            self.notify("reading the run's event kinds… (a moment)")
            return
        row = self.events.cursor_row
        picked = self.query_one(ContextPlot).picked
        gid = row[0] if row is not None and row[3] == "llm_call_started" else None
        gid = gid if gid is not None else (picked.global_id if picked is not None else None)
        open_editor(self, self.reader, self.target.project, self.events.rows, gid)

    def action_compare_profiles(self) -> None:
        from zymi_tui.tui.tuning.hooks import open_compare

        open_compare(self, self.target.store, self.target.project)

    def action_sweep(self) -> None:
        from zymi_tui.tui.tuning.hooks import open_sweep

        open_sweep(self, self.target.store, self.target.project)

    def action_copy_stream(self) -> None:
        key = self.current_key()
        if key is not None:
            self.app.copy_to_clipboard(key.stream_id)
            self.notify(f"copied {key.stream_id}")

    async def action_chat(self) -> None:
        """Chat on this project (or, on the bundled sample or without a project, a new demo project)."""
        from zymi_tui.tui.chat.hook import open_chat

        problem, where = await open_chat(self.app, self.target.project, self.target.store)
        if problem:
            self.notify(problem, severity="error")
        else:
            self.app.notify(where, timeout=8)

    def action_export(self) -> None:
        if self.selected is None:
            self.notify("select a run to export (the runs list)")
            return
        self.notify("exporting the run… (its calls are replayed)", timeout=3)
        self.export_run(self.selected.stream_id, self.app.export_screenshot())

    @work(thread=True, group="export", exit_on_error=False, description="the run's export")
    def export_run(self, run: str, svg: str) -> None:
        from zymi_tui.tui.dashboard_export import export_run
        from zymi_tui.tui.writes import failed_line

        try:
            line = export_run(self.target.store, self.target.project, run, svg)
        except OSError as e:
            self.app.call_from_thread(self.notify, failed_line(e), severity="error")
            return
        self.app.call_from_thread(self.notify, line, timeout=10)

    # fork-resume: R fork the selected run, C compare a fork with its parent, P jump parent <-> fork
    def action_fork(self) -> None:
        from zymi_tui.tui.resume.hook import open_fork

        open_fork(self)

    def action_compare_fork(self) -> None:
        from zymi_tui.tui.resume.hook import open_compare

        open_compare(self)

    def action_lineage(self) -> None:
        from zymi_tui.tui.resume.hook import jump_lineage

        jump_lineage(self)

    def focused_stream(self) -> str | None:
        """The step stream the user looks at: the picked call's, the step filter's, else the run's first."""
        picked = self.query_one(ContextPlot).picked
        row = self.events.cursor_row
        for stream in (
            row[1] if row is not None and self.events.tag_of(row) == "llm_call_started" else None,
            picked.stream_id if picked is not None else None,
        ):
            if stream and step_of(stream):
                return stream
        steps = [row[1] for row in self.events.rows if self.events.tag_of(row) == "llm_call_started"]
        if self.events.step is not None:
            steps = [s for s in steps if step_of(s) == self.events.step] or steps
        return steps[0] if steps else None

    def action_life(self) -> None:
        from zymi_tui.tui.life import LifeScreen

        stream = self.focused_stream()
        if stream is None:
            pending = self.events.kinds_pending
            self.notify("reading the run's event kinds… (a moment)" if pending else
                        "select a run with LLM calls to see the life of its messages")  # fmt: skip
            return
        self.app.push_screen(LifeScreen(self.target.store, self.target.project, stream))

    def action_advice(self) -> None:
        from zymi_tui.tui.advice import AdviceScreen

        self.app.push_screen(AdviceScreen(self))

    def action_toggle_x(self) -> None:
        self.query_one(ContextPlot).action_toggle_x()


class DashboardApp(SafeApp):
    """The dashboard. `theme` fixes the colours (tests); `live=False` skips the tail worker."""

    TITLE = "zymi-tui observe"
    # read with the app's own styles at start: a screen bringing a stylesheet the app has not read makes
    # Textual parse every source again (Stylesheet.reparse), on the way to the first frame
    CSS_PATH = MainScreen.CSS_PATH

    def __init__(self, target: Target, *, theme: str | None = None, first: FirstRuns | None = None) -> None:
        """`first`: the newest runs, read before the app starts (`first_runs`), listed in its first frame."""
        super().__init__()
        self.target = target
        self.first = first
        if theme:
            self.theme = theme

    def get_default_screen(self) -> MainScreen:
        """The dashboard is the app's first screen (no empty screen is made, laid out and switched from first)."""
        return MainScreen(self.target, self.first)

    @property
    def main(self) -> MainScreen:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        raise LookupError("the main screen is not open")

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        try:
            main = self.main
        except LookupError:
            return
        # a store's kind tags and stream ids are shown cleaned, and never as markup (the palette reads its titles so)
        for tag in main.events.kind_tags:
            title = f"Show only events of kind {escape(clean(tag, one_line=True))}"
            yield SystemCommand(title, "events filter", lambda t=tag: main.set_kinds({t}))
        for step in main.events.steps:
            name = "the run stream" if step == RUN_GROUP else f"step {escape(clean(step, one_line=True))}"
            yield SystemCommand(f"Show only {name}", "events and plot filter", lambda s=step: main.set_step(s))
