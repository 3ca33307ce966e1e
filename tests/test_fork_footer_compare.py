"""The fork dialog's footer offers `c Compare` only once there is a fork to compare: before a fork existed
the key did nothing, yet the footer listed it. Read from the footer as painted, a real fork run between."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_resume_cli import demo_project, run_parent
from tests.test_tui_narrow_footer import bottom_row, painted_hints
from tests.waiting import pilot_until
from zymi_tui.events.location import SqliteStore
from zymi_tui.tui.app import DashboardApp, MainScreen
from zymi_tui.tui.resume.compare import ForkCompareScreen
from zymi_tui.tui.resume.modal import ForkModal
from zymi_tui.tui.target import Target

COMPARE = "c Compare"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_compare_is_on_the_footer_once_a_fork_exists(tmp_path: Path, size: tuple[int, int]) -> None:
    project = demo_project(tmp_path / "proj")
    parent = run_parent(project, "review", "topic=billing")
    app = DashboardApp(Target(SqliteStore(project / ".zymi" / "events.db"), project), theme="textual-dark")
    async with app.run_test(size=size) as pilot:
        await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen))
        main = app.main
        await pilot_until(pilot, lambda: main.runs.find_stream(parent) is not None and main.selected is not None)
        await pilot.press("R")
        modal = app.screen
        assert isinstance(modal, ForkModal)
        await pilot_until(pilot, lambda: modal.plan is not None, "the fork's plan")
        await pilot_until(pilot, lambda: "Esc Close" in painted_hints(bottom_row(app)), "the dialog's footer")
        before = bottom_row(app)
        await pilot.press("c")  # nothing to compare yet: the dialog stays
        await pilot.pause(0.2)
        assert app.screen is modal
        await pilot.press("enter")
        await pilot_until(pilot, lambda: modal.job is not None and modal.job.state != "running", "the fork's end")
        assert modal.job is not None and modal.job.state == "done", modal.job and modal.job.error
        await pilot_until(pilot, lambda: COMPARE in painted_hints(bottom_row(app)), f"{COMPARE!r} on the footer")
        after = bottom_row(app)
        await pilot.press("c")
        await pilot_until(pilot, lambda: isinstance(app.screen, ForkCompareScreen), "the comparison")
    assert COMPARE not in painted_hints(before), before
    assert "Esc Close" in painted_hints(after), after
