"""The screens the dashboard opens: the inspector, the tuning screens (tuning/), the chat, fork-resume (resume/),
message life and advice; and the run's export."""

from __future__ import annotations

from textual import work

from zymi_tui.events.store import step_of
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui.dashboard.search import DashboardSearch
from zymi_tui.tui.messages import EventRead
from zymi_tui.tui.plot import ContextPlot


class DashboardLaunchers(DashboardSearch):
    """The actions that open another screen on the selected run or call."""

    def action_inspect(self) -> None:
        plot = self.query_one(ContextPlot)
        call = plot.picked
        if call is None:  # nothing picked: the call the plot's title names ("last #N")
            call = plot.last_call()
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

    def on_event_read(self, msg: EventRead) -> None:
        if msg.key != self.selected:
            return
        if msg.event is None:
            self.notify("that LLM call's row could not be read (see the banner)", severity="warning")
            return
        self._open_inspector(msg.event)

    def _open_inspector(self, target: StoredEvent) -> None:
        from zymi_tui.tui.inspector import InspectorScreen

        self.app.push_screen(InspectorScreen(target, self.target.store, self.target.project))

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
