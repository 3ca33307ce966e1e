"""The dashboard's filters: runs by status, events by step and by kind, grouped or flat, and the mark of the
events a compaction replaced."""

from __future__ import annotations

from zymi_tui.tui.dashboard.results import DashboardResults
from zymi_tui.tui.dashboard.state import KIND_PRESETS, STATUS_CYCLE
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.widgets import EventsList, RunsList


class DashboardFilters(DashboardResults):
    """Filters of the runs list and of the events list (and the plot's step)."""

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
