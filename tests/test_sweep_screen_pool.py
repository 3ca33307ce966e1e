"""The sweep screen on a store big enough for the process pool (>= 20,000 events), driven by keys:
it sweeps (the pool's resource tracker once failed to start under Textual's captured stderr), shows
its progress, and escape stops the workers."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from textual.widgets import DataTable, Input, Static

from tests.conftest import ORACLE, cloned_runs
from tests.waiting import pilot_until
from zymi_tui.events.location import SqliteStore
from zymi_tui.tui.tuning.app import TuningApp
from zymi_tui.tui.tuning.sweep_screen import SweepScreen


def _status(screen: SweepScreen) -> str:
    """The status line ("" until the screen is composed)."""
    return "".join(str(found.render()) for found in screen.query("#sweep-status").results(Static))


async def test_the_sweep_screen_sweeps_on_the_pool_and_escape_stops_its_workers(tmp_path: Path) -> None:
    db = SqliteStore(cloned_runs(tmp_path, 116))  # 20,184 events: the screen's sweep takes the pool
    project = ORACLE / "coding_default" / "project"
    app = TuningApp(db, lambda _r: SweepScreen(db, project=project, windows="2,10", soft_caps="4k,40k"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot_until(pilot, lambda: isinstance(app.screen, SweepScreen), "the sweep screen")
        screen = app.screen
        assert isinstance(screen, SweepScreen)
        await pilot_until(pilot, lambda: not screen.running and _status(screen) != "", "the first sweep to end")
        assert screen.result is not None, _status(screen)
        assert screen.query_one("#points", DataTable).row_count == 4
        first = screen.result

        await pilot.click("#windows")  # a bigger grid, 2,10-20:1 (24 points), stopped while its workers replay
        await pilot.press("end", "minus", "2", "0", "colon", "1", "enter")
        await pilot_until(pilot, lambda: "%" in _status(screen), "the workers' progress")
        assert multiprocessing.active_children()
        await pilot.press("escape")
        await pilot_until(pilot, lambda: not multiprocessing.active_children(), "the workers to stop")
        assert _status(screen) == "cancelled"
        assert screen.query_one("#windows", Input).value == "2,10-20:1"
        assert screen.result is first
        assert isinstance(app.screen, SweepScreen)  # escape cancelled the sweep, it did not close the screen
