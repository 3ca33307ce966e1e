"""The monkey test: on each hostile store, open the dashboard and every screen reachable from it, press
every key the action registry lists for each screen, plus the arrows, Enter, Tab and Esc. No exception,
the app still running, the store's bytes unchanged.

Two registered keys are not pressed: `q` (quits: pressed once at the very end instead) and Enter in the
fork modal (it starts a real fork, which writes a new run into the store by design).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input

from tests.hostile_stores import HOSTILE, make_store
from tests.tui_support import make_app, settle
from zymi_tui.tui.actions import all_actions
from zymi_tui.tui.app import MainScreen

NAV = ["down", "up", "right", "left", "tab", "enter"]
SKIP = {("ForkModal", "go"), ("MainScreen", "app.quit"), ("ChatDashboard", "app.quit")}
BACK = ["escape", "escape", "f4", "escape", "n", "q"]
MAX_DEPTH = 2


class Monkey:
    def __init__(self, pilot: Pilot[Any]) -> None:
        self.pilot = pilot
        self.screens: set[str] = set()
        self.keys = 0
        self.trace: list[str] = []
        self.times: dict[str, float] = {}

    @property
    def app(self) -> Any:
        return self.pilot.app

    async def press(self, key: str) -> None:
        await self.pilot.press(key)
        self.keys += 1
        self.trace.append(f"{type(self.app.screen).__name__}:{key}")
        assert self.app.is_running, f"the app stopped after {key!r}"

    async def back_to(self, screen: Screen[Any]) -> None:
        for key in BACK:
            if self.app.screen is screen or screen not in self.app.screen_stack:
                return
            await self.press(key)
        assert self.app.screen is screen, f"cannot leave {type(self.app.screen).__name__}"

    async def drive(self, screen: Screen[Any], depth: int = 0) -> None:
        name = type(screen).__name__
        self.screens.add(name)
        t0 = time.monotonic()
        try:
            await self._drive(screen, name, depth)
        finally:
            self.times[name] = time.monotonic() - t0

    async def _drive(self, screen: Screen[Any], name: str, depth: int) -> None:
        acts = [a for a in all_actions(screen) if (name, a.action) not in SKIP]
        typed = bool(getattr(screen, "HAS_INPUT", False))  # letters go into its text input: press F1, not ?
        keys = [next((k for k in a.keys.split(",") if not (typed and k == "question_mark")), a.keys) for a in acts]
        leaving = [k for k, a in zip(keys, acts, strict=True) if "escape" in a.keys or "f4" in a.keys]
        staying = [k for k in keys if k not in leaving]
        for key in [*staying, *NAV, *leaving, "escape"]:
            if self.app.screen is not screen:
                if screen not in self.app.screen_stack:
                    return  # this screen closed itself (Esc, F4): its keys are done
                await self.back_to(screen)
            await self.press(key)
            if isinstance(self.app.focused, Input) and not typed and self.app.screen is screen:
                await self.press("enter")  # a search box opened: apply it, so the next keys are keys again
            opened = self.app.screen
            if opened is not screen and screen in self.app.screen_stack:
                if depth < MAX_DEPTH and type(opened).__name__ not in self.screens:
                    await self.pilot.pause(0.1)
                    await self.drive(opened, depth + 1)
                await self.back_to(screen)


@pytest.mark.parametrize("name", HOSTILE)
async def test_monkey(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZYMI_TUI_CONFIG_DIR", str(tmp_path / "config"))  # a saved profile lands here
    monkeypatch.setenv("ZYMI_TUI_LOG_DIR", str(tmp_path / "logs"))  # a failure's traceback lands here
    monkeypatch.chdir(tmp_path)  # exports land here
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # and the demo project `d` makes (the chat keeps it)
    db, _project = await make_store(name, tmp_path / name)
    before = db.read_bytes()
    t0 = time.monotonic()
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await settle(app, pilot)
        assert isinstance(main, MainScreen)
        monkey = Monkey(pilot)
        await pilot.press("tab", "tab", "right")  # the plot, its first call picked: i, K and Enter act on it
        await monkey.drive(main)
        await monkey.back_to(main)
        assert app.is_running
        await pilot.press("q")
        await pilot.pause(0.2)
    assert app.return_code in (0, None)
    assert db.read_bytes() == before, "the store changed"
    assert not (tmp_path / "logs").exists(), "a worker failed with an unexpected error (see its log)"
    print(f"\nmonkey on {name}: {len(monkey.screens)} screens ({', '.join(sorted(monkey.screens))}), "
          f"{monkey.keys} keys, {time.monotonic() - t0:.1f} s")  # fmt: skip
