"""SVG snapshots of the dashboard's screens at 120x40 and 80x24 (fixed theme, UTC, no live tail)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui_support import make_app, scenario_copy, settle, use_utc
from tests.waiting import pilot_until, workers_idle
from zymi_tui.tui.app import DashboardApp, MainScreen
from zymi_tui.tui.inspector import InspectorScreen
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.widgets import CursorList, EventsList


@pytest.fixture(autouse=True)
def _utc() -> None:
    use_utc()


async def steady(pilot: Pilot[Any]) -> None:
    """Runs, the selected run, its pipeline, peaks, masking and the integrity check loaded, the tail
    stopped, and every message those workers posted handled; then the lists scrolled to the top."""
    app = pilot.app
    assert isinstance(app, DashboardApp)
    main = await settle(app, pilot)
    main.workers.cancel_group(main, "tail")
    groups = ("runs", "run", "pipeline", "verify", "masking")

    def loaded() -> bool:
        key = main.selected
        return (
            main.verified is not None
            and main.masking_checked
            and (key is None or str(key) in main.pipeline_steps)
            and not main.run_loading
            and not any(w.group in groups and not w.is_finished for w in main.workers)  # pending ones too
        )

    while True:
        await pilot_until(pilot, loaded, "the dashboard's workers")
        await pilot.pause()  # what they posted is handled (a handler may start another worker)
        if loaded():
            break
    main.plot_dirty = True
    main._redraw_plot()
    app.clear_notifications()
    await pilot.pause()
    for view in main.query(CursorList):  # from the top, so the cursor lands at the same place every time
        view.update_size()
        view.scroll_to(y=0, animate=False, immediate=True)
        view.keep_cursor_visible()
    await pilot.pause()


async def cursor_shown(pilot: Pilot[Any]) -> None:
    """Until the events list has laid out its cursor (after `reveal_cursor`'s refresh)."""
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    view = main.query_one(EventsList)

    def shown() -> bool:
        span = view.cursor_span()
        rows = view.scrollable_content_region.height
        if span is None or rows <= 0:
            return False
        top, height = span
        y = round(view.scroll_y)
        return y <= top and top + min(height, rows) <= y + rows and view.virtual_size.height == view.total_lines()

    await pilot_until(pilot, shown, "the events list's cursor on screen")
    await pilot.pause()


def app_for(name: str, tmp_path: Path) -> DashboardApp:
    return make_app(scenario_copy(name, tmp_path), banner=f"snapshot store: {name}")


def test_main_screen_120x40(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(app_for("coding_compaction", tmp_path), terminal_size=(120, 40), run_before=steady)


def test_main_screen_80x24(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(app_for("coding_compaction", tmp_path), terminal_size=(80, 24), run_before=steady)


def test_chat_turns_120x40(snap_compare: Any, tmp_path: Path) -> None:
    assert snap_compare(app_for("chat_profile", tmp_path), terminal_size=(120, 40), run_before=steady)


def test_expanded_event_80x24(snap_compare: Any, tmp_path: Path) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await steady(pilot)
        await pilot.press("tab", "up", "enter")
        main = pilot.app.screen
        assert isinstance(main, MainScreen) and isinstance(main.focused, EventsList)
        await pilot_until(pilot, lambda: main.events.cursor_gid in main.events.expanded, "the event expanded")
        await cursor_shown(pilot)

    assert snap_compare(app_for("coding_default", tmp_path), terminal_size=(80, 24), run_before=before)


def test_inspector_120x40(snap_compare: Any, tmp_path: Path) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await steady(pilot)
        main = pilot.app.screen
        call = next(se for se in main.events.loaded() if se.event.tag == "llm_call_started"  # type: ignore[attr-defined]
                    and se.event.sequence > 50)  # fmt: skip
        main.events.jump_to(call.global_id)  # type: ignore[attr-defined]
        await pilot.press("i")
        screen = pilot.app.screen
        assert isinstance(screen, InspectorScreen)
        await pilot_until(pilot, lambda: screen.rebuilt is not None, "the inspector's rebuilt context")
        await workers_idle(pilot)

    assert snap_compare(app_for("coding_default", tmp_path), terminal_size=(120, 40), run_before=before)


def grew_app(tmp_path: Path) -> DashboardApp:
    from tests.hostile_stores import make_store_sync

    db, _project = make_store_sync("grew", tmp_path / "grew")
    return make_app(db, banner="snapshot store: a compaction whose summary grew by 1,204 B")


async def pick_the_peak(pilot: Pilot[Any]) -> None:
    await steady(pilot)
    await pilot.press("tab", "tab", "left")  # the plot: its last call (the peak), figures in the title
    plot = pilot.app.screen.query_one(ContextPlot)
    await pilot_until(pilot, lambda: plot.has_focus and plot.picked is not None, "the plot's last call picked")
    await pilot.pause()


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_plot_with_a_compaction_that_grew(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    assert snap_compare(grew_app(tmp_path), terminal_size=size, run_before=pick_the_peak)
