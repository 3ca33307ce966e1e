"""The replay screen: a whole store replayed under two or more profiles side by side, per run and in
total, with one overlay plot per run; a progress bar, cancel, and Markdown / CSV / JSON export."""

from __future__ import annotations

import functools
from pathlib import Path

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Input, Label, Static

from zymi_tui.context.knobs import ContextKnobs, KnobError, resolve_knobs
from zymi_tui.events.location import StoreLocation
from zymi_tui.replay.compare import CAVEAT, Comparison, price_note
from zymi_tui.replay.compare_report import COLUMNS, recorded_cache_note, to_csv, to_json_text, to_markdown
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.tui.actions import Act, Nav
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.safe_text import clean
from zymi_tui.tui.tuning.job_screen import JobScreen
from zymi_tui.tui.tuning.jobs import run_comparison
from zymi_tui.tui.tuning.plots import OverlayPlot
from zymi_tui.tui.writes import failed_line, write_files

RECORDED = "recorded"


def fill_table(table: DataTable[Text], header: list[str], rows: list[list[str]], keys: list[str] | None = None) -> None:
    """Columns sized to their content up front, so the layout never depends on when rows arrive."""
    table.clear(columns=True)
    header = [clean(h, one_line=True) for h in header]
    cells = [[clean(c, one_line=True) for c in row] for row in rows]
    for i, label in enumerate(header):
        table.add_column(Text(label), width=max([cell_len(label), *(cell_len(r[i]) for r in cells)]))
    for n, row in enumerate(cells):
        table.add_row(*(Text(c) for c in row), key=None if keys is None else keys[n])


def total_rows(cmp: Comparison) -> list[list[str]]:
    """The totals table as shown: one row per figure, one column per profile."""
    rows = [[label, *(f"{getattr(p.total, key):,}" for p in cmp.profiles)] for key, label in COLUMNS]
    currency = "USD"
    costs = []
    for p in cmp.profiles:
        c = p.total.cost
        costs.append(
            "no price"
            if c is None
            else f"{c.total:.4f} {currency}"
            + (" est." if p.total.cost_estimated else "")
            + recorded_cache_note(p.total)
        )
    rows.append(["cost", *costs])
    rows.append(["figures", *(p.total.provenance for p in cmp.profiles)])
    return rows


class CompareScreen(JobScreen):
    """`profiles` is the comma list first shown; Enter in it (or ctrl+r) runs the replay."""

    JOB = "compare"
    PROGRESS = "replaying under "
    DONE_VERB = "replayed"
    HELP_TITLE = "Profiles side by side"
    HELP_INTRO = (
        "The whole store replayed under two or more profiles (type them comma-separated, Enter runs): "
        "per run and in total, with each run's curves overlaid. Same trajectory assumed."
    )
    NAV = (Nav("Tab", "the profiles box, the totals, the runs (a run's row picks its plot)"),)
    ACTIONS = (
        Act("ctrl+r", "run", "Replay", "Replay the store under the profiles typed above.", "replay run compare"),
        Act(
            "ctrl+o",
            "export",
            "Export",
            "Write the comparison as Markdown, CSV and JSON in the export folder (named in full).",
            "export markdown csv json save",
        ),
        Act("escape", "close", "Back", "Cancel a running replay, or go back.", "back cancel close"),
    )

    def __init__(
        self, store: StoreLocation, *, project: Path | None, profiles: str = "recorded,chat,eval",
        model: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.store, self.project, self.initial, self.model = store, project, profiles, model
        self.comparison: Comparison | None = None
        self.seconds = 0.0

    def compose(self) -> ComposeResult:
        yield Static(Text(f"⚠ {CAVEAT}", style="bold yellow"), id="caveat")
        with Horizontal(id="compare-top"):
            yield Label("profiles ")
            yield Input(self.initial, id="profiles")
        yield from self.job_widgets()
        with VerticalScroll(id="compare-body"):  # side by side when wide (tuning.tcss), stacked when narrow
            with Vertical(id="compare-tables"):
                yield DataTable(id="totals", zebra_stripes=True, cursor_type="row")
                yield DataTable(id="per-run", zebra_stripes=True, cursor_type="row")
            yield OverlayPlot(id="overlay")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.sub_title = str(self.store)
        self.action_run()

    # -- running ----------------------------------------------------------------------------------
    def parse_profiles(self) -> list[tuple[str, ContextKnobs | None]] | None:
        names = [n.strip() for n in self.query_one("#profiles", Input).value.split(",") if n.strip()]
        if len(names) < 2:
            self.status("give two or more profiles, e.g. recorded,chat,eval", error=True)
            return None
        base = recorded_knobs(self.project)
        out: list[tuple[str, ContextKnobs | None]] = []
        for name in names:
            if name in (RECORDED, "project"):
                out.append((name, None))
                continue
            try:
                out.append((name, resolve_knobs(base, name, [], named_by="profile")))
            except KnobError as e:
                self.status(str(e), error=True)
                return None
        return out

    @on(Input.Submitted, "#profiles")
    def submitted(self) -> None:
        self.action_run()

    def action_run(self) -> None:
        profiles = self.parse_profiles()
        if profiles is None:
            return
        self.start_job(
            lambda tick, cancelled: run_comparison(
                self.store, self.project, profiles, model=self.model, tick=tick, cancelled=cancelled
            ),
            "replaying… (escape cancels)",
        )

    def show_result(self, result: object, seconds: float) -> None:
        assert isinstance(result, Comparison)
        self.comparison, self.seconds = result, seconds
        cmp = self.comparison
        self.status(
            f"{len(cmp.runs())} run(s) · tokens: recorded where the context is unchanged, "
            f"else estimated ({cmp.tokens_ratio_source}) · cost: {price_note(cmp)}"
        )
        self.fill()

    def fill(self) -> None:
        cmp = self.comparison
        if cmp is None:
            return
        names = [p.name + (" ●" if p.recorded else "") for p in cmp.profiles]
        fill_table(self.query_one("#totals", DataTable), ["whole store", *names], total_rows(cmp))
        rows = []
        for run in cmp.runs():
            cells = [run]
            for p in cmp.profiles:
                t = p.per_run.get(run)
                cells.append("-" if t is None else f"{t.tokens_sum:,} / {t.tokens_peak:,}"
                             + (f" ✗{t.hard_cap_failures}" if t.hard_cap_failures else ""))  # fmt: skip
            rows.append(cells)
        header = ["run", *(f"{n} tokens sum/peak" for n in names)]
        fill_table(self.query_one("#per-run", DataTable), header, rows, keys=cmp.runs())
        if cmp.runs():
            self.plot(cmp.runs()[0])

    @on(DataTable.RowHighlighted, "#per-run")
    def run_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.plot(str(event.row_key.value))

    def plot(self, run: str) -> None:
        if self.comparison is not None:
            tail = run if len(run) <= 25 else f"…{run[-24:]}"  # (the end tells runs apart; "…": not the whole id)
            self.query_one(OverlayPlot).show(
                clean(f"{tail}: bytes per call (what-if estimated)", one_line=True), self.comparison.series(run)
            )

    # -- actions ----------------------------------------------------------------------------------
    def action_export(self) -> None:
        cmp = self.comparison
        if cmp is None:
            self.notify("nothing to export yet", severity="warning")
            return
        files = [(f"zymi-tui-compare.{fmt}", functools.partial(render, cmp))
                 for fmt, render in (("md", to_markdown), ("csv", to_csv), ("json", to_json_text))]  # fmt: skip
        try:
            self.notify(write_files(files))
        except OSError as e:
            self.notify(failed_line(e), severity="error")
