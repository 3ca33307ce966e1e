"""`zymi-tui observe`'s app: it opens on the dashboard (`MainScreen`, tui/dashboard/) and adds the palette's
filters of the events list."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import SystemCommand
from textual.markup import escape
from textual.screen import Screen

from zymi_tui.tui.base_app import SafeApp
from zymi_tui.tui.chain_freshness import StartedCheck
from zymi_tui.tui.dashboard.screen import MainScreen
from zymi_tui.tui.safe_text import clean
from zymi_tui.tui.source import FirstRuns
from zymi_tui.tui.state.events import RUN_GROUP
from zymi_tui.tui.target import Target

__all__ = ["DashboardApp", "MainScreen"]  # the CLI, the tests and scripts open the dashboard from here


class DashboardApp(SafeApp):
    """The dashboard. `theme` fixes the colours (tests); `live=False` skips the tail worker."""

    TITLE = "zymi-tui observe"
    # read with the app's own styles at start: a screen bringing a stylesheet the app has not read makes
    # Textual parse every source again (Stylesheet.reparse), on the way to the first frame
    CSS_PATH = MainScreen.CSS_PATH

    def __init__(
        self,
        target: Target,
        *,
        theme: str | None = None,
        first: FirstRuns | None = None,
        check: StartedCheck | None = None,
    ) -> None:
        """`first`: the newest runs, read before the app starts (`first_runs`), listed in its first frame; `check`:
        the store's hash-chain check, started before the app (`start_check`)."""
        super().__init__()
        self.target = target
        self.first = first
        self.check = check
        if theme:
            self.theme = theme

    def get_default_screen(self) -> MainScreen:
        """The dashboard is the app's first screen (no empty screen is made, laid out and switched from first)."""
        first, self.first = self.first, None  # held by the screen only, which lets it go once drawn
        return MainScreen(self.target, first, self.check)

    @property
    def main(self) -> MainScreen:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        raise LookupError("the main screen is not open")

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        try:
            main = self.main
        except LookupError:
            return
        # a store's kind tags and stream ids are shown cleaned, and never as markup (the palette reads its titles so)
        for tag in main.events.kind_tags:
            title = f"Show only events of kind {escape(clean(tag, one_line=True))}"
            yield SystemCommand(title, "events filter", lambda t=tag: main.set_kinds({t}))
        for step in main.events.steps:
            name = "the run stream" if step == RUN_GROUP else f"step {escape(clean(step, one_line=True))}"
            yield SystemCommand(f"Show only {name}", "events and plot filter", lambda s=step: main.set_step(s))
