"""The profiles screen's plot names its run by the end of the id, and marks the cut with "…": a run id's last
24 characters alone read as a whole, broken id ("7-4274-acb1-…: bytes per call")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.test_life_advice_tui import dashboard_ready, open_by_key
from tests.tui_support import make_app, scenario_copy
from tests.waiting import pilot_until
from zymi_tui.tui.tuning.compare_screen import CompareScreen
from zymi_tui.tui.tuning.plots import OverlayPlot


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_plot_title_marks_a_cut_run_id(tmp_path: Path, size: tuple[int, int]) -> None:
    db = scenario_copy("coding_compaction", tmp_path)
    with sqlite3.connect(db) as con:  # the runs the table lists: run streams, not steps
        runs = sorted(s for (s,) in con.execute("SELECT DISTINCT stream_id FROM events") if ":step:" not in s)
    assert all(len(r) > 25 for r in runs)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await dashboard_ready(pilot)
        screen = await open_by_key(pilot, "X", CompareScreen, lambda s: s.comparison is not None)
        plot = screen.query_one(OverlayPlot)
        plot.scroll_visible(animate=False)  # (at 80x24 the plot is below the tables)

        def title() -> str:
            strips = app.screen._compositor.render_strips()
            r = plot.region
            rows = [str(strips[y].text)[r.x : r.right].strip() for y in range(r.y, min(r.bottom, len(strips)))]
            return next((row for row in rows if "bytes per" in row), "")

        await pilot_until(pilot, lambda: bool(title()), "the plot's title")
        shown = title()
    assert shown.startswith("…"), shown
    assert any(shown[1:].startswith(f"{r[-24:]}: bytes per") for r in runs), (shown, runs)
