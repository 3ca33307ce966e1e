"""The selected run: the cursor resting on it, reading it, and the knobs its plot and graph are drawn under
(the project's, or a foreign agent's own policy for a store of its spans)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work

from zymi_tui.events.store import EventReader
from zymi_tui.tui.dashboard.panels import DashboardPanels
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.source import AGENT_CAPS, store_from_spans
from zymi_tui.tui.widgets import CursorList, EventsList, RunsList

if TYPE_CHECKING:
    from zymi_tui.context.knobs import ContextKnobs

SELECT_DELAY_S = 0.12
JUMP_RETRIES = 20  # a run just created may take a few list reloads to appear


class DashboardSelection(DashboardPanels):
    """Which run is shown, and the knobs it is shown under."""

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

    @work(thread=True, exclusive=True, group="agent", exit_on_error=False, description="foreign agents' steps")
    def find_agent_steps(self) -> None:
        """Without a project, a store `collect`/`import` wrote holds a foreign agent's calls: the banner
        then says whose caps they are (its own), not the engine defaults'."""

        async def job(reader: EventReader) -> None:
            if await store_from_spans(reader):
                self.app.call_from_thread(self.agent_caps)

        if self.after_first_check():  # (a large store's step starts take CPU the first check needs more)
            self.in_thread(job)

    def agent_caps(self) -> None:
        """The agent's own policy: nothing masked, forgotten or capped by zymi (no cap lines drawn)."""
        from zymi_tui.telemetry.spans_store import AGENT_OWN_KNOBS  # the knobs model (yaml): not before the first frame

        self.apply_knobs(AGENT_OWN_KNOBS, AGENT_CAPS)
        plot = self.query_one(ContextPlot)
        plot.soft_cap = plot.hard_cap = None

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
            call = plot.call_of(row[0])
            if call is not None:
                plot.pick(call)

    @on(ContextPlot.CallPicked)
    def call_picked(self, msg: ContextPlot.CallPicked) -> None:
        if msg.call is not None and self.events.jump_to(msg.call.global_id):
            view = self.query_one(EventsList)
            view.reveal_cursor()
            view.refresh()
