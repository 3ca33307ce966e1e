"""What the dashboard's workers found, applied: the runs list, a run's pages, index, kinds and rows, its figures,
masking and pipeline, the hash-chain verdicts, and the live tail's new events."""

from __future__ import annotations

from textual import on

from zymi_tui.events.runs import RUN_TAGS, RunSummary
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui import messages
from zymi_tui.tui.dashboard.selection import DashboardSelection
from zymi_tui.tui.source import AGENT_CAPS, from_spans, peaks_of
from zymi_tui.tui.widgets import EventsList, RunsList

WINDOW_MARGIN = 120  # events read above and below the screen, ahead of scrolling


class DashboardResults(DashboardSelection):
    """The handlers of the workers' messages (loaders.py) and of the live tail."""

    def on_runs_loaded(self, msg: messages.RunsLoaded) -> None:
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
            if not self.checked_by_a_process():  # (else the check started with the screen)
                self.verify_chains()  # after the runs, so hashing the store in this process does not delay them

    def on_liveness_checked(self, msg: messages.LivenessChecked) -> None:
        if self.runs.summaries is msg.before:  # else the list was read again meanwhile, liveness with it
            self.show_runs(msg.after, complete=self.runs_complete)

    def on_peaks_loaded(self, msg: messages.PeaksLoaded) -> None:
        for key, chars in msg.peaks.items():
            self.runs.set_peak(key, chars)
        self.query_one(RunsList).refresh()
        self.update_run_info()

    def on_chain_checked(self, msg: messages.ChainChecked) -> None:
        self.broken = msg.broken
        self.verified = msg.streams
        self.chain_freshness.landed(msg.stamp, msg.damage, msg.took)
        for stream in msg.broken:
            self.runs.mark_broken(stream)
        self.query_one(RunsList).refresh()
        self.update_run_info()
        self.update_banner()

    def on_rows_skipped(self, msg: messages.RowsSkipped) -> None:
        for bad in msg.rows:
            self.bad_rows[bad.global_id] = bad.describe()
        self.update_banner()

    def on_first_check_done(self, _: messages.FirstCheckDone) -> None:
        key, self.index_after_check = self.index_after_check, None
        if key is not None and key == self.selected:
            self.load_run(key)  # (its newest events again, then its index)

    def on_store_trouble(self, msg: messages.StoreTrouble) -> None:
        if msg.text != self.trouble:
            self.notify(msg.text, severity="error", timeout=10)
        self.trouble = msg.text
        self.update_banner()

    def on_run_page(self, msg: messages.RunPage) -> None:
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

    def on_run_indexed(self, msg: messages.RunIndexed) -> None:
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
        self.call_after_refresh(self.read_kinds, msg.key, msg.rows, len(msg.rows))  # once the list is on screen

    def on_run_kinds(self, msg: messages.RunKinds) -> None:
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
        self.collect_run(msg.key, self.events.rows, len(self.events.rows))

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

    def on_run_rows(self, msg: messages.RunRows) -> None:
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

    def on_calls_collected(self, msg: messages.CallsCollected) -> None:
        if msg.taken is not None:
            msg.taken.set()
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

    def on_masking_found(self, msg: messages.MaskingFound) -> None:
        if msg.key == self.selected:
            self.masking = msg.first_masked
            self.masking_checked = True
            self.plot_dirty = True

    def on_pipeline_loaded(self, msg: messages.PipelineLoaded) -> None:
        if msg.key == self.selected:
            self.pipeline_steps[str(msg.key)] = (msg.steps, msg.problem)
            self.refresh_graph()

    def on_tail_batch(self, msg: messages.TailBatch) -> None:
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
