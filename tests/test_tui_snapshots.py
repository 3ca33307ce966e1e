"""SVG snapshots of the dashboard's screens at 120x40 and 80x24 (fixed theme, UTC, no live tail)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui_support import make_app, scenario_copy, settle, use_utc
from tests.waiting import LIMIT
from zymi_tui.tui.app import DashboardApp
from zymi_tui.tui.inspector import InspectorScreen
from zymi_tui.tui.widgets import CursorList


@pytest.fixture(autouse=True)
def _utc() -> None:
    use_utc()


async def steady(pilot: Pilot[Any]) -> None:
    """Runs, the selected run, peaks and the integrity check loaded; the tail stopped."""
    app = pilot.app
    assert isinstance(app, DashboardApp)
    main = await settle(app, pilot)
    main.workers.cancel_group(main, "tail")
    deadline = time.monotonic() + LIMIT
    groups = ("runs", "run", "pipeline", "verify", "masking")

    def busy() -> bool:
        return (
            main.verified is None
            or not main.masking_checked
            or any(w.group in groups and w.is_running for w in main.workers)
        )

    while time.monotonic() < deadline and busy():
        await pilot.pause(0.05)
    main.plot_dirty = True
    main._redraw_plot()
    app.clear_notifications()
    await pilot.pause(0.2)
    for view in main.query(CursorList):  # from the top, so the cursor lands at the same place every time
        view.update_size()
        view.scroll_to(y=0, animate=False, immediate=True)
        view.keep_cursor_visible()
    await pilot.pause(0.2)


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
        await pilot.pause(0.2)

    assert snap_compare(app_for("coding_default", tmp_path), terminal_size=(80, 24), run_before=before)


def test_inspector_120x40(snap_compare: Any, tmp_path: Path) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await steady(pilot)
        main = pilot.app.screen
        call = next(se for se in main.events.events if se.event.tag == "llm_call_started"  # type: ignore[attr-defined]
                    and se.event.sequence > 50)  # fmt: skip
        main.events.jump_to(call.global_id)  # type: ignore[attr-defined]
        await pilot.press("i")
        screen = pilot.app.screen
        assert isinstance(screen, InspectorScreen)
        deadline = time.monotonic() + LIMIT
        while screen.rebuilt is None and time.monotonic() < deadline:
            await pilot.pause(0.05)
        await pilot.pause(0.2)

    assert snap_compare(app_for("coding_default", tmp_path), terminal_size=(120, 40), run_before=before)


def grew_app(tmp_path: Path) -> DashboardApp:
    from tests.hostile_stores import make_store_sync

    db, _project = make_store_sync("grew", tmp_path / "grew")
    return make_app(db, banner="snapshot store: a compaction whose summary grew by 1,204 B")


async def pick_the_peak(pilot: Pilot[Any]) -> None:
    await steady(pilot)
    await pilot.press("tab", "tab", "left")  # the plot: its last call (the peak), figures in the title
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_plot_with_a_compaction_that_grew(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    assert snap_compare(grew_app(tmp_path), terminal_size=size, run_before=pick_the_peak)
