"""`zymi-tui observe`: runs, events (with step sub-streams), the context plot and pipeline graph, live."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from zymi_tui.events.factory import open_reader
from zymi_tui.events.store import StoreError
from zymi_tui.tui.actions import Act
from zymi_tui.tui.dashboard.launchers import DashboardLaunchers
from zymi_tui.tui.footers import OnceFooter
from zymi_tui.tui.graph_view import GraphView
from zymi_tui.tui.help import DASHBOARD_NAV, DASHBOARD_PANELS
from zymi_tui.tui.messages import StoreTrouble
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.source import knobs_of
from zymi_tui.tui.widgets import EventsList, RunsList

REDRAW_S = 0.25
LIVENESS_S = 2.0  # how often runs listed as running are checked for a live writer (events/writers.py)


class MainScreen(DashboardLaunchers):
    """`zymi-tui observe`'s screen: its actions (one registry), its layout, its start and its live controls."""

    CSS_PATH = str(Path(__file__).parent.parent / "main.tcss")  # absolute: subclasses live in other folders
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
            # every run, if the process reading them has sent the whole list while the screen's modules loaded
            self.first = self.first.settled()
            self.bad_rows.update({b.global_id: b.describe() for b in self.first.skipped})
            self.show_runs(self.first.summaries, complete=self.first.whole)
        self.update_banner()
        # `zymi-tui observe` keeps the garbage collector off from its imports to the first frame (tui_cmds)
        self.call_after_refresh(gc.enable)
        self.call_after_refresh(self.start)  # the first frame is drawn before any worker competes with it

    async def on_unmount(self) -> None:
        """Stop the workers, then close the reader (its connection thread would keep the process alive)."""
        self.workers.cancel_node(self)
        if self.chain_check is not None:
            self.chain_check.stop()
        if self.started_check is not None:  # (the app ended before its first check was waited for)
            self.started_check.process.stop()
        if self.reader is not None:
            reader, self.reader = self.reader, None
            await reader.close()

    @work(exclusive=True, group="open", exit_on_error=False)
    async def start(self) -> None:
        first, self.first = self.first, None  # (the runs drawn first are let go once the whole list is drawn)
        if first is not None:
            self.last_gid = first.last_global_id  # (a chain check started with the rest of the runs stamps it)
        if first is not None and not first.whole:
            # the rest of the runs, taken as soon as the process reading them sends them (not after the knobs,
            # whose model loads pydantic and yaml in this process)
            self.reload_runs(drawn=[first])
        knobs, source = await asyncio.to_thread(knobs_of, self.target.project)
        self.apply_knobs(knobs, source)
        try:
            self.reader = await open_reader(self.target.store)
            # the live tail starts after the newest runs already drawn, if they were read before the start
            self.last_gid = first.last_global_id if first is not None else await self.reader.max_global_id()
        except StoreError as e:
            self.post_message(StoreTrouble(str(e)))
            return
        # the newest runs are drawn first, unless a run named on the command line is to be selected; a large
        # SQLite store's hash chains are checked by a process of their own (started with `observe`'s); others'
        # once every run is drawn, in a thread of this process (show_runs)
        if self.checked_by_a_process():
            self.verify_chains()
        else:
            self.first_check_over()  # (the check comes once every run is listed: nothing waits for it)
        if first is None:
            self.reload_runs(newest_first=self.target.run is None)
        elif first.whole:
            self.reload_runs(drawn=[first])  # (the runs' peaks)
        self.tail_store()
        if self.target.project is None:
            self.find_agent_steps()

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

    def action_copy_stream(self) -> None:
        key = self.current_key()
        if key is not None:
            self.app.copy_to_clipboard(key.stream_id)
            self.notify(f"copied {key.stream_id}")

    def action_toggle_x(self) -> None:
        self.query_one(ContextPlot).action_toggle_x()
