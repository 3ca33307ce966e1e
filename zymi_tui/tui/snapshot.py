"""A screen of the dashboard as SVG, drawn headless (what `zymi-tui export --format svg` writes)."""

from __future__ import annotations

import time
from collections.abc import Callable

from zymi_tui.tui.advice import AdviceScreen
from zymi_tui.tui.app import DashboardApp, MainScreen
from zymi_tui.tui.life import LifeScreen
from zymi_tui.tui.target import Target

READY_S = 120.0
EMPTY_GRACE_S = 3.0


class SnapshotError(RuntimeError):
    """The screen did not get ready in time (the message says which)."""


async def screen_svg(target: Target, screen: str, size: tuple[int, int]) -> str:
    """The SVG of `screen` ("dashboard", "advice" or "life": what `A` / `L` open on the dashboard)."""
    app = DashboardApp(target, theme="textual-dark")
    async with app.run_test(size=size) as pilot:

        async def until(ready: Callable[[], bool], what: str) -> None:
            deadline = time.monotonic() + READY_S
            while not ready():
                if time.monotonic() > deadline:
                    said = "; ".join(str(n.message) for n in app._notifications)
                    raise SnapshotError(f"{what} was not ready after {READY_S:.0f} s" + (f" ({said})" if said else ""))
                await pilot.pause(0.05)

        started = time.monotonic()

        def dashboard_ready() -> bool:
            """The selected run's events loaded (a store with no run: listed, after a grace period, as a
            first listing can come before the runs are read)."""
            s = app.screen
            if not isinstance(s, MainScreen) or s.reader is None or not s.runs_seen:
                return False
            if not s.runs.summaries:
                return screen == "dashboard" and time.monotonic() - started > EMPTY_GRACE_S
            loaded = not s.run_loading and bool(s.events.rows) and not s.events.kinds_pending  # a long run's too
            return s.selected is not None and loaded and s.current_key() == s.selected

        await until(dashboard_ready, "the dashboard")
        if screen == "advice":
            app.main.action_advice()
            await until(lambda: isinstance(app.screen, AdviceScreen) and app.screen.advice is not None, "the advice")
        elif screen == "life":
            app.main.action_life()
            await until(lambda: isinstance(app.screen, LifeScreen) and app.screen.life is not None, "the grid")
        await pilot.pause(0.3)
        return app.export_screenshot()
