"""Parent and fork side by side: the figures, the context curves overlaid, the answers and their diff."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static
from textual_plotext import PlotextPlot

from zymi_tui.context.knobs import describe_knobs
from zymi_tui.events.store import EventReader, StoreError
from zymi_tui.replay.costs import PriceError, PriceTable, load_prices
from zymi_tui.tui.actions import Act, ActionScreen
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.resume.figures import ForkSpan, RunFigures, answer_diff, figure_rows, span_figures
from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.tuning.plots import label_axes

DIFF_STYLE = {"same": "", "del": "red strike", "ins": "bold green"}


class CurvesPlot(PlotextPlot):
    """approx_context_chars per agent call: the parent (grey) under the fork (cyan)."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.series: list[tuple[str, list[int], str]] = []
        self.caps: list[tuple[int, str]] = []

    def set_series(self, series: list[tuple[str, list[int], str]], caps: list[tuple[int, str]]) -> None:
        self.series, self.caps = series, caps
        self.replot()

    def replot(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("context per LLM call (approx_context_chars, recorded)")
        plt.xlabel("call")
        for label, ys, colour in self.series:
            if ys:
                plt.plot(list(range(1, len(ys) + 1)), ys, label=label, color=colour, marker="braille")
        longest = max((len(ys) for _, ys, _ in self.series), default=0)
        shown = [float(y) for _, ys, _ in self.series for y in ys]
        for cap, colour in self.caps:
            if longest and cap <= 2 * max((max(ys, default=0) for _, ys, _ in self.series), default=0):
                plt.hline(cap, color=colour)
                shown.append(float(cap))
        label_axes(self, [1.0, float(max(longest, 1))], shown, integer_x=True)
        self.refresh()


def figures_table(
    parent: RunFigures, fork: RunFigures, prices: PriceTable | None = None, model: str | None = None
) -> Table:
    t = Table(expand=True, show_edge=False, pad_edge=False)
    t.add_column("")
    t.add_column("parent", justify="right")
    t.add_column("fork", justify="right")
    t.add_column("change", justify="right")
    for name, a, b, change in figure_rows(parent, fork, prices, model):
        t.add_row(safe_text(name), safe_text(a), safe_text(b), safe_text(change, "dim" if change == "=" else "bold"))
    return t


def diff_text(parent: RunFigures, fork: RunFigures) -> Text:
    t = Text()
    if parent.answer is None and fork.answer is None:
        return Text("neither run has a final answer", style="dim")
    for piece in answer_diff(parent.answer, fork.answer):
        t.append(clean(piece.text), style=DIFF_STYLE[piece.op])
    return t


class ForkCompareScreen(ActionScreen):
    """Opened with the parent's and the fork's stream ids; reads both runs from the dashboard's reader."""

    DEFAULT_CSS = """
    ForkCompareScreen #cmp-head { height: auto; padding: 0 1; }
    ForkCompareScreen #cmp-table { height: auto; padding: 0 1; }
    ForkCompareScreen #cmp-plot { height: 16; }
    ForkCompareScreen #cmp-answers { height: auto; }
    ForkCompareScreen .answer { width: 1fr; height: auto; border: round $foreground-muted 50%; padding: 0 1; }
    ForkCompareScreen #cmp-diff { height: auto; border: round $accent; padding: 0 1; }
    """
    FAILURE_PANELS: ClassVar[dict[str, str]] = {"compare": "#cmp-head"}
    HELP_TITLE = "Parent and fork"
    HELP_INTRO = "A fork beside its parent: the figures, the context curves overlaid, the answers and their diff."
    ACTIONS = (
        Act("escape,q", "close", "Back", "Go back to the dashboard.", "back close"),
        Act("r", "reload", "Reload", "Read both runs again (a running fork grows).", "reload refresh fork resume"),
    )

    def __init__(self, reader: EventReader, parent: str, fork: str, *, soft_cap: int | None = None,
                 hard_cap: int | None = None, model: str | None = None) -> None:  # fmt: skip
        super().__init__()
        self.model = model  # the project's model: prices zymi's runs, whose events do not name it
        self.prices: PriceTable | None = None
        self.reader, self.parent_stream, self.fork_stream = reader, parent, fork
        self.soft_cap, self.hard_cap = soft_cap, hard_cap
        self.figures: tuple[RunFigures, RunFigures] | None = None
        self.span: ForkSpan | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="cmp-head")
            yield Static(id="cmp-table")
            yield CurvesPlot(id="cmp-plot")
            with Horizontal(id="cmp-answers"):
                yield Static(id="cmp-parent-answer", classes="answer")
                yield Static(id="cmp-fork-answer", classes="answer")
            yield Static(id="cmp-diff")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#cmp-parent-answer").border_title = "parent's answer"
        self.query_one("#cmp-fork-answer").border_title = "fork's answer"
        self.query_one("#cmp-diff").border_title = "answer diff (red: only the parent's, green: only the fork's)"
        self.query_one("#cmp-head", Static).update(Text("loading both runs…", style="dim"))
        self.load()

    def action_reload(self) -> None:
        self.load()

    def action_close(self) -> None:
        self.dismiss()

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def load(self) -> None:
        try:
            a = await self.reader.read_stream(self.parent_stream, include_steps=True)
            b = await self.reader.read_stream(self.fork_stream, include_steps=True)
        except StoreError as e:
            self.query_one("#cmp-head", Static).update(safe_text(e, "bold red"))
            return
        try:
            self.prices = load_prices()
        except PriceError as e:
            self.notify(f"no cost: {e}", severity="warning")
        parent, fork, span = span_figures(self.parent_stream, a, self.fork_stream, b)
        self.show(parent, fork, span)

    def show(self, parent: RunFigures, fork: RunFigures, span: ForkSpan | None = None) -> None:
        self.figures = (parent, fork)
        self.span = span
        head = Text()
        head.append("parent ", style="dim")
        head.append(clean(parent.stream_id) + "\n", style="bold")
        head.append("fork   ", style="dim")
        head.append(clean(fork.stream_id), style="bold cyan")
        if fork.fork_at_step:
            head.append(clean(f"  (forked at '{fork.fork_at_step}')"))
        if fork.knobs:
            head.append("\n" + clean(f"fork's knobs for the re-run steps: {describe_knobs(fork.knobs)}"), style="dim")
        if span is not None:
            head.append("\n" + clean(span.describe() + " (figures, curves and answers alike)"), style="yellow")
        self.query_one("#cmp-head", Static).update(head)
        self.query_one("#cmp-table", Static).update(figures_table(parent, fork, self.prices, self.model))
        caps: list[tuple[int, str]] = []
        soft = fork.knobs.get("soft_cap_chars") if fork.knobs else self.soft_cap
        hard = fork.knobs.get("hard_cap_chars") if fork.knobs else self.hard_cap
        if isinstance(soft, int):
            caps.append((soft, "orange"))
        if isinstance(hard, int):
            caps.append((hard, "red"))
        self.query_one(CurvesPlot).set_series([("parent", parent.curve, "gray"), ("fork", fork.curve, "cyan")], caps)
        self.query_one("#cmp-parent-answer", Static).update(safe_text(parent.answer or "(no final answer)"))
        self.query_one("#cmp-fork-answer", Static).update(safe_text(fork.answer or "(no final answer)"))
        self.query_one("#cmp-diff", Static).update(diff_text(parent, fork))
