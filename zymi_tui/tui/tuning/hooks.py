"""How the dashboard opens the tuning screens (MainScreen: K the knob editor, X compare profiles, W sweep)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from textual.app import App

from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import STEP_MARK, EventReader, IndexRow
from zymi_tui.tui.tuning.compare_screen import CompareScreen
from zymi_tui.tui.tuning.editor import TuningScreen
from zymi_tui.tui.tuning.sweep_screen import SweepScreen


class Dashboard(Protocol):
    """What the hooks need of the dashboard's main screen."""

    @property
    def app(self) -> App[None]: ...

    def notify(self, message: str) -> None: ...


def pick_call(rows: Iterable[IndexRow], picked_gid: int | None) -> tuple[str, int] | None:
    """The (step stream, sequence) to tune: the picked LlmCallStarted, else the run's last one (from the
    run's index: (global id, stream, sequence, kind tag) rows)."""
    calls = [row for row in rows if row[3] == "llm_call_started" and STEP_MARK in row[1]]
    chosen = next((row for row in calls if row[0] == picked_gid), None) or (calls[-1] if calls else None)
    return None if chosen is None else (chosen[1], chosen[2])


def open_editor(
    screen: Dashboard, reader: EventReader | None, project: Path | None, rows: Iterable[IndexRow], gid: int | None
) -> None:
    target = pick_call(rows, gid)
    if reader is None or target is None:
        screen.notify("select a run with LLM calls to tune its knobs")
        return
    stream, seq = target
    screen.app.push_screen(TuningScreen(reader, stream, project=project, sequence=seq))


def open_compare(screen: Dashboard, store: StoreLocation, project: Path | None) -> None:
    screen.app.push_screen(CompareScreen(store, project=project))


def open_sweep(screen: Dashboard, store: StoreLocation, project: Path | None) -> None:
    screen.app.push_screen(SweepScreen(store, project=project))
