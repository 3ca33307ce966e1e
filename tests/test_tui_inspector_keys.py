"""The inspector's keys (issue 35): `p`/`n` step to the stream's previous and next LLM call, `d` lists every
change from the previous call where the summary lists the 4 largest and says how many more; and the plots of
the profiles, sweep and fork-compare screens label their axes as a person reads them (26.8k, not 26752.0).
The calls are checked against the store (SQL)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult

from tests.test_life_advice_tui import dashboard_ready, open_by_key, text_of
from tests.tui_support import make_app, scenario_copy, sql
from tests.waiting import pilot_until
from zymi_tui.tui.inspector import InspectorScreen

CHANGE = r"\s*(added|masked|forgot|compacted|changed|unmasked) (seq|memory) "
RAW_FLOAT = re.compile(r"(?<![\d.,])\d{3,}\.\d(?![\d%])")


def at_call(screen: InspectorScreen, seq: int) -> Callable[[], bool]:
    return lambda: screen.rebuilt is not None and screen.rebuilt.sequence == seq


async def test_inspector_steps_calls_and_lists_every_change(tmp_path: Path) -> None:
    db = scenario_copy("coding_compaction", tmp_path)
    calls = sql(db, "SELECT id, stream_id, sequence FROM events WHERE kind_tag = 'llm_call_started' "
                    "AND stream_id LIKE '%:step:%' ORDER BY id")  # fmt: skip
    stream = calls[0][1]
    seqs = [int(str(seq)) for _, s, seq in calls if s == stream]
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await dashboard_ready(pilot)
        gid = next(int(str(i)) for i, s, seq in calls if s == stream and int(str(seq)) == seqs[2])
        assert main.events.jump_to(gid)
        screen = await open_by_key(pilot, "i", InspectorScreen, lambda s: s.rebuilt is not None)
        assert screen.rebuilt is not None and screen.rebuilt.sequence == seqs[2]
        await pilot.press("p")
        await pilot_until(pilot, lambda: screen.rebuilt is not None and screen.rebuilt.sequence == seqs[1], "p")
        await pilot.press("n", "n")
        await pilot_until(pilot, lambda: screen.rebuilt is not None and screen.rebuilt.sequence == seqs[3], "n n")
        summary = text_of(screen, "#summary")
        assert f"vs the previous call (seq {seqs[2]})" in summary, summary
        # on to the first call whose changes are more than the 4 listed (the compactions make some)
        at = 3
        while re.search(r"… \d+ more \(d: every change\)", summary) is None and at + 1 < len(seqs):
            await pilot.press("n")
            at += 1
            await pilot_until(pilot, at_call(screen, seqs[at]))
            await pilot.pause(0.1)
            summary = text_of(screen, "#summary")
        more = re.search(r"… (\d+) more \(d: every change\)", summary)
        assert more is not None, "no call with more than 4 changes from the previous one"
        shown = [line for line in summary.splitlines() if re.match(CHANGE, line)]
        assert len(shown) == 4, summary
        await pilot.press("d")
        await pilot.pause(0.2)
        every = [line for line in text_of(screen, "#message-text").splitlines() if re.match(CHANGE, line)]
        assert every[:4] == shown and len(every) == 4 + int(more.group(1)), (shown, every)
        await pilot.press("escape")


def plotted(app_plot: Any) -> str:
    return str(app_plot.plt.build())


async def test_plots_label_axes_as_readable_numbers() -> None:
    from zymi_tui.tui.resume.compare import CurvesPlot
    from zymi_tui.tui.tuning.plots import OverlayPlot, ScatterPlot

    class Plots(App[None]):
        def compose(self) -> ComposeResult:
            yield OverlayPlot(id="overlay")
            yield ScatterPlot(id="scatter")
            yield CurvesPlot(id="curves")

    app = Plots()
    async with app.run_test(size=(100, 60)) as pilot:
        await pilot.pause()
        overlay, scatter, curves = app.query_one(OverlayPlot), app.query_one(ScatterPlot), app.query_one(CurvesPlot)
        series = {"recorded": [(i, 1000 + 997 * i) for i in range(27)], "chat": [(i, 500 + 311 * i) for i in range(27)]}
        overlay.show("run", series)
        scatter.show([(137722.0, 26752.0, True, "a"), (279500.8, 9117.3, True, "b"), (200000.0, 30000.0, False, "c")])
        curves.set_series([("parent", [1200 + 913 * i for i in range(30)], "grey"),
                           ("fork", [1100 + 700 * i for i in range(30)], "cyan")], [(30000, "orange")])  # fmt: skip
        await pilot.pause()
        for plot in (overlay, scatter, curves):
            text = plotted(plot)
            assert RAW_FLOAT.findall(text) == [], (type(plot).__name__, RAW_FLOAT.findall(text)[:4])
            assert re.search(r"\d+(\.\d)?k", text), (type(plot).__name__, text[:400])
