"""Snapshots of the tuning screens on oracle stores (timings hidden: they differ run to run)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from textual.widgets import Input, Static

from tests.conftest import ORACLE
from tests.waiting import LIMIT, workers_idle
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.store import EventReader
from zymi_tui.tui.tuning.app import TuningApp
from zymi_tui.tui.tuning.compare_screen import CompareScreen
from zymi_tui.tui.tuning.editor import TuningScreen
from zymi_tui.tui.tuning.sweep_screen import SweepScreen

SIZE = (150, 45)


def store(name: str) -> tuple[SqliteStore, Path]:
    return SqliteStore(ORACLE / name / "events.db"), ORACLE / name / "project"


async def settle(pilot: Any) -> None:
    """Until every worker is done and its result drawn (the job's result arrives as a message)."""
    deadline = time.monotonic() + LIMIT
    while True:
        await pilot.pause(0.02)
        await workers_idle(pilot)
        screen = pilot.app.screen
        if not getattr(screen, "running", False) and getattr(screen, "memory", True) is not None:
            break
        assert time.monotonic() < deadline, "the tuning screen did not settle"
    await pilot.pause(0.1)
    pilot.app.screen.query_one("#elapsed", Static).display = False
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False  # a blinking cursor makes the picture depend on the instant
    await pilot.pause()


def test_editor_snapshot(snap_compare: Any) -> None:
    db, project = store("coding_default")
    stream = json.loads((ORACLE / "coding_default" / "expected.json").read_text())[0]["stream_id"]

    def make(reader: EventReader) -> TuningScreen:
        return TuningScreen(reader, stream, project=project)

    async def edit(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.screen.query_one("#knob-observation_window", Input).value = "3"
        pilot.app.screen.query_one("#knob-hard_cap_chars", Input).value = "10"  # below the soft cap: error shown
        await settle(pilot)

    assert snap_compare(TuningApp(db, make), terminal_size=SIZE, run_before=edit)


def test_replay_screen_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    db, project = store("hard_cap")
    app = TuningApp(db, lambda _r: CompareScreen(db, project=project, profiles="recorded,chat,eval"))
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_sweep_snapshot(snap_compare: Any) -> None:
    db, project = store("coding_compaction")
    app = TuningApp(db, lambda _r: SweepScreen(db, project=project, windows="2,4,10", soft_caps="4k,8k,40k"))
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)
