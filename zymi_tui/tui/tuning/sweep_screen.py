"""The sweep screen: a grid of observation_window x soft_cap_chars replayed over the store, as a
table and a scatter of total input tokens against peak context, with the Pareto front marked."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Input, Static

from zymi_tui.events.location import StoreLocation
from zymi_tui.replay.compare import CAVEAT
from zymi_tui.replay.sweep import DEFAULT_SOFT_CAPS, DEFAULT_WINDOWS, Sweep, SweepError, parse_values
from zymi_tui.tui.actions import Act
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.tuning.compare_screen import fill_table
from zymi_tui.tui.tuning.job_screen import JobScreen
from zymi_tui.tui.tuning.jobs import run_sweep
from zymi_tui.tui.tuning.plots import ScatterPlot


def sweep_rows(result: Sweep) -> list[list[str]]:
    return [
        ["★" if p.pareto else ("✗" if p.hard_cap_failures else ""), f"{p.observation_window}",
         f"{p.soft_cap_chars:,}", f"{p.tokens_sum:,}", f"{p.tokens_peak:,}", f"{p.compactions_simulated}",
         f"{p.hard_cap_failures}", p.provenance]
        for p in result.points
    ]  # fmt: skip


class SweepScreen(JobScreen):
    JOB = "sweep"
    PROGRESS = "grid point "
    DONE_VERB = "swept"
    HELP_TITLE = "Knob sweep"
    HELP_INTRO = (
        "A grid of observation_window x soft_cap_chars replayed over the store: a table and a scatter of "
        "total input tokens against peak context, the Pareto front marked ★. Same trajectory assumed."
    )
    ACTIONS = (
        Act(
            "ctrl+r",
            "run",
            "Sweep",
            "Replay the grid typed above (Enter in a box does the same).",
            "sweep grid run pareto",
        ),
        Act("escape", "close", "Back", "Cancel a running sweep, or go back.", "back cancel close"),
    )

    def __init__(
        self, store: StoreLocation, *, project: Path | None, windows: str | None = None, soft_caps: str | None = None
    ) -> None:
        super().__init__()
        self.store, self.project = store, project
        self.windows_text = windows or ",".join(map(str, DEFAULT_WINDOWS))
        self.caps_text = soft_caps or ",".join(f"{c // 1000}k" for c in DEFAULT_SOFT_CAPS)
        self.result: Sweep | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text(f"⚠ {CAVEAT}", style="bold yellow"), id="caveat")
        with Horizontal(id="sweep-top"):  # each box named by its knob on its border: all the width for the values
            for box, value, knob in (("windows", self.windows_text, "observation_window"),
                                     ("caps", self.caps_text, "soft_cap_chars")):  # fmt: skip
                field = Input(value, id=box)
                field.border_title = knob
                yield field
        yield from self.job_widgets()
        with VerticalScroll(id="sweep-body"):  # side by side when wide (tuning.tcss), stacked when narrow
            yield DataTable(id="points", zebra_stripes=True, cursor_type="row")
            yield ScatterPlot(id="scatter")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.sub_title = str(self.store)
        self.action_run()

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.action_run()

    def action_run(self) -> None:
        try:
            windows = parse_values(self.query_one("#windows", Input).value, "window")
            caps = parse_values(self.query_one("#caps", Input).value, "soft-cap")
        except SweepError as e:
            self.status(str(e).replace("--", ""), error=True)
            return
        self.start_job(
            lambda tick, cancelled: run_sweep(self.store, self.project, windows, caps, tick=tick, cancelled=cancelled),
            f"replaying {len(windows) * len(caps)} grid points… (escape cancels)",
        )

    def show_result(self, result: object, seconds: float) -> None:
        assert isinstance(result, Sweep)
        self.result = result
        self.status(f"{len(self.result.points)} points · ★ Pareto front "
                    "(total input tokens vs peak) · ✗ would fail the hard cap")  # fmt: skip
        header = ["", "window", "soft cap", "input tok", "peak tok", "compactions", "hard-cap ✗", "figures"]
        fill_table(self.query_one("#points", DataTable), header, sweep_rows(self.result))
        self.query_one(ScatterPlot).show(
            [(float(p.tokens_sum), float(p.tokens_peak), p.pareto, f"w{p.observation_window}/s{p.soft_cap_chars}")
             for p in self.result.points]
        )  # fmt: skip
