"""The Advice panel (dashboard `A`): `zymi-tui advise` on the open store. Each finding with its
evidence, recommendation and replayed effect; `e` opens the knob editor with the recommendation
applied at the call that shows it, `f` forks that run with it (resume)."""

from __future__ import annotations

from typing import ClassVar, Protocol

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from zymi_tui.context.knobs import ContextKnobs, make_knobs
from zymi_tui.engine.tool_catalog import definition_bytes
from zymi_tui.errors import UserError
from zymi_tui.events.store import EventReader, run_of, step_of
from zymi_tui.replay.advice import Advice, Finding, advise, head_lines, json_parts, recommendation_lines, to_markdown
from zymi_tui.replay.costs import PriceError, load_prices
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.tui.actions import Act, ActionScreen, Nav
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.store_job import with_reader
from zymi_tui.tui.target import Target
from zymi_tui.tui.writes import failed_line, write_files


class Dashboard(Protocol):
    """What the advice screen needs of the dashboard's main screen."""

    target: Target
    reader: EventReader | None

    def focused_stream(self) -> str | None: ...


class AdviceLoaded(Message):
    def __init__(self, advice: Advice | None, error: str | None) -> None:
        super().__init__()
        self.advice, self.error = advice, error


class AdviceScreen(ActionScreen):
    DEFAULT_CSS = """
    AdviceScreen #advice-head { height: auto; padding: 0 1; }
    AdviceScreen #advice-body { height: 1fr; }
    AdviceScreen #advice-list { width: 40%; min-width: 30; height: 1fr; }
    AdviceScreen #advice-scroll { width: 1fr; height: 1fr; }
    AdviceScreen #advice-detail { padding: 0 1; }
    """
    HELP_TITLE = "Advice"
    HELP_INTRO = (
        "`zymi-tui advise` on this store: each finding with its signal, evidence, and the knob sets searched for "
        "it, each replayed here (same trajectory assumed) against keeping the current knobs on one objective (cost "
        "with cache, else tokens sent; no added hard-cap failure): the best that wins, or nothing to change."
    )
    NAV = (Nav("↑ ↓", "move between findings"),)
    ACTIONS: ClassVar[tuple[Act, ...]] = (
        Act("escape", "close", "Back", "Close the advice and go back to the dashboard.", "back close"),
        Act("e", "edit", "Edit knobs", "Open the knob editor with this recommendation applied at the call that "
            "shows the finding.", "edit knobs tune apply recommendation"),
        Act("f", "fork", "Fork with it", "Fork the finding's run from its step with the recommended knobs (resume).",
            "fork resume rerun recommendation"),
        Act("ctrl+o", "export", "Export", "Write the advice report as Markdown and JSON to the current folder.",
            "export save report markdown json"),
    )  # fmt: skip

    def __init__(self, main: Dashboard) -> None:
        super().__init__()
        self.main = main
        self.advice: Advice | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("reading the store and replaying its recommendations…"), id="advice-head")
        with Horizontal(id="advice-body"):
            yield OptionList(id="advice-list")
            with VerticalScroll(id="advice-scroll"):
                yield Static(id="advice-detail")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#advice-list").border_title = "Findings"
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load(self) -> None:
        target = self.main.target

        async def job(reader: EventReader) -> Advice:
            try:
                prices = load_prices()
            except PriceError:
                prices = None
            return await advise(reader, target.project, prices=prices, tool_bytes=definition_bytes)

        try:
            self.post_message(AdviceLoaded(with_reader(target.store, job), None))
        except UserError as e:
            self.post_message(AdviceLoaded(None, e.one_line()))

    def on_advice_loaded(self, msg: AdviceLoaded) -> None:
        head = self.query_one("#advice-head", Static)
        if msg.advice is None:
            head.update(safe_text(f"advice failed: {msg.error}", "red"))
            return
        self.advice = a = msg.advice
        t = Text()
        t.append(f"{len(a.findings)} finding(s) over {a.calls} agent calls", style="bold")
        for line in head_lines(a)[1:]:
            t.append("\n" + clean(line))
        t.append(f"\n⚠ {a.caveat}", style="yellow")
        head.update(t)
        options = self.query_one(OptionList)
        options.clear_options()
        for i, f in enumerate(a.findings):
            label = safe_text(f.signal, "bold", one_line=True)
            label.append("\n" + clean(f.summary, one_line=True, max_cells=120), style="dim")
            options.add_option(Option(label, id=str(i)))
        if a.findings:
            options.highlighted = 0
            options.focus()
            self.show(a.findings[0])
        else:
            self.query_one("#advice-detail", Static).update(Text("No findings: nothing to change on this store."))

    @on(OptionList.OptionHighlighted)
    def highlighted(self, msg: OptionList.OptionHighlighted) -> None:
        f = self.current()
        if f is not None:
            self.show(f)

    def current(self) -> Finding | None:
        i = self.query_one(OptionList).highlighted
        if self.advice is None or i is None or not 0 <= i < len(self.advice.findings):
            return None
        return self.advice.findings[i]

    def show(self, f: Finding) -> None:
        t = Text()
        t.append(clean(f.signal), style="bold")
        t.append("\n" + clean(f.summary) + "\n")
        if f.stream_id is not None:
            t.append(clean(f"shown at {f.stream_id} seq {f.sequence}") + "\n", style="dim")
        for e in f.evidence:
            t.append("  • " + clean(e) + "\n")
        rec = f.recommendation
        if rec is not None:
            t.append("\n→ " + clean(rec.text) + "\n", style="dim" if rec.nothing_to_change else "green")
            for line in recommendation_lines(rec):
                t.append("  " + clean(line) + "\n")
            if rec.knobs is not None:
                t.append("  e: open the knob editor with them · f: fork the run with them\n", style="cyan")
        self.query_one("#advice-detail", Static).update(t)

    def _target(self) -> tuple[Finding, str, ContextKnobs] | None:
        """The highlighted finding, the step stream to apply it to and its knobs (None: said why)."""
        f = self.current()
        if f is not None and f.recommendation is not None and f.recommendation.nothing_to_change:
            self.notify("nothing to change: no knob set tried beats the current knobs")
            return None
        if f is None or f.recommendation is None or f.recommendation.knobs is None:
            self.notify("this finding's recommendation is not a change of knobs")
            return None
        stream = f.stream_id or self.main.focused_stream()
        if stream is None or step_of(stream) is None or self.main.reader is None:
            self.notify("no LLM call to apply it to")
            return None
        return f, stream, make_knobs(dict(f.recommendation.knobs), "advice")

    def action_edit(self) -> None:
        from zymi_tui.tui.tuning.editor import TuningScreen

        found = self._target()
        if found is not None and self.main.reader is not None:
            f, stream, knobs = found
            seq = f.sequence if f.stream_id == stream else None
            project = self.main.target.project
            self.app.push_screen(TuningScreen(self.main.reader, stream, project=project, sequence=seq, knobs=knobs))

    def action_fork(self) -> None:
        from zymi_tui.tui.resume.hook import fork_for_real

        found = self._target()
        if found is not None and self.main.reader is not None:
            _, stream, knobs = found
            t = self.main.target
            base = recorded_knobs(t.project)
            fork_for_real(self.app, self.main.reader, t.project, t.store, run_of(stream), step_of(stream), base, knobs)

    def action_export(self) -> None:
        if self.advice is None:
            self.notify("the advice is not ready yet")
            return
        advice = self.advice
        files = [
            ("zymi-advice.md", lambda: to_markdown(advice)),
            ("zymi-advice.json", lambda: "".join(json_parts(advice))),
        ]
        try:
            self.notify(write_files(files))
        except OSError as e:
            self.notify(failed_line(e), severity="error")

    def action_close(self) -> None:
        self.dismiss()
