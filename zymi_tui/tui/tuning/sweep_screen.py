"""The sweep screen: a grid of observation_window x soft_cap_chars replayed over the store, as a
table and a scatter of total input tokens against peak context, with the Pareto front marked."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Input, Label, ProgressBar, Static
from textual.worker import get_current_worker

from zymi_tui.events.location import StoreLocation
from zymi_tui.replay.compare import CAVEAT
from zymi_tui.replay.sweep import DEFAULT_SOFT_CAPS, DEFAULT_WINDOWS, Sweep, SweepError, parse_values
from zymi_tui.tui.actions import Act, ActionScreen
from zymi_tui.tui.safe_text import safe_text
from zymi_tui.tui.tuning.compare_screen import JobDone, JobProgress, fill_table
from zymi_tui.tui.tuning.jobs import Cancelled, run_sweep
from zymi_tui.tui.tuning.plots import ScatterPlot


def sweep_rows(result: Sweep) -> list[list[str]]:
    return [
        ["★" if p.pareto else ("✗" if p.hard_cap_failures else ""), f"{p.observation_window}",
         f"{p.soft_cap_chars:,}", f"{p.tokens_sum:,}", f"{p.tokens_peak:,}", f"{p.compactions_simulated}",
         f"{p.hard_cap_failures}", p.provenance]
        for p in result.points
    ]  # fmt: skip


class SweepScreen(ActionScreen):
    CSS_PATH = str(Path(__file__).with_name("tuning.tcss"))
    HAS_INPUT = True
    FAILURE_PANELS: ClassVar[dict[str, str]] = {"sweep": "#sweep-status"}
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
        self.running = False

    def compose(self) -> ComposeResult:
        yield Static(Text(f"⚠ {CAVEAT}", style="bold yellow"), id="caveat")
        with Horizontal(id="sweep-top"):
            yield Label("observation_window ")
            yield Input(self.windows_text, id="windows")
            yield Label(" soft_cap_chars ")
            yield Input(self.caps_text, id="caps")
        yield ProgressBar(total=1.0, id="progress", show_eta=False)
        yield Static("", id="sweep-status")
        yield Static("", id="elapsed")
        with Horizontal(id="sweep-body"):
            yield DataTable(id="points", zebra_stripes=True, cursor_type="row")
            yield ScatterPlot(id="scatter")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = str(self.store)
        self.action_run()

    def status(self, text: str, *, error: bool = False) -> None:
        self.query_one("#sweep-status", Static).update(safe_text(text, "bold red" if error else ""))

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
        self.running = True
        self.query_one("#progress", ProgressBar).update(progress=0.0)
        self.status(f"replaying {len(windows) * len(caps)} grid points… (escape cancels)")
        self.job(windows, caps)

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False)
    def job(self, windows: list[int], caps: list[int]) -> None:
        worker = get_current_worker()
        t0 = time.perf_counter()
        try:
            result = run_sweep(self.store, self.project, windows, caps,
                               tick=lambda f, name: self.post_message(JobProgress(f, name)),
                               cancelled=lambda: worker.is_cancelled)  # fmt: skip
        except Cancelled:
            self.post_message(JobDone(None, "cancelled", 0.0))
            return
        except Exception as e:  # shown, never a crash
            self.post_message(JobDone(None, str(e).splitlines()[0] if str(e) else type(e).__name__, 0.0))
            return
        self.post_message(JobDone(result, None, time.perf_counter() - t0))

    def on_job_progress(self, message: JobProgress) -> None:
        self.query_one("#progress", ProgressBar).update(progress=message.fraction)
        self.status(f"grid point {message.label}… {message.fraction:.0%} (escape cancels)")

    def on_job_done(self, message: JobDone) -> None:
        self.running = False
        if message.error is not None:
            self.status(message.error, error=True)
            return
        assert isinstance(message.result, Sweep)
        self.result = message.result
        self.query_one("#progress", ProgressBar).update(progress=1.0)
        self.query_one("#elapsed", Static).update(Text(f"swept in {message.seconds:.2f} s", style="dim"))
        self.status(f"{len(self.result.points)} points · ★ Pareto front "
                    "(total input tokens vs peak) · ✗ would fail the hard cap")  # fmt: skip
        header = ["", "window", "soft cap", "input tokens", "peak tokens", "compactions est.", "hard-cap fails",
                  "figures"]  # fmt: skip
        fill_table(self.query_one("#points", DataTable), header, sweep_rows(self.result))
        self.query_one(ScatterPlot).show(
            [(float(p.tokens_sum), float(p.tokens_peak), p.pareto, f"w{p.observation_window}/s{p.soft_cap_chars}")
             for p in self.result.points]
        )  # fmt: skip

    def action_close(self) -> None:
        if self.running:
            self.workers.cancel_group(self, "sweep")
            self.running = False
            self.status("cancelled", error=True)
            return
        self.dismiss(None)
