"""`zymi-tui tune`: the tuning screens on their own (the dashboard mounts the same screens)."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.screen import Screen

from zymi_tui.events.store import EventReader


class TuningApp(App[None]):
    """Opens one tuning screen over an open reader; closing it quits."""

    TITLE = "zymi-tui tune"

    def __init__(self, reader: EventReader, screen: Screen[None], *, project: Path | None = None) -> None:
        super().__init__()
        self.reader, self.first, self.project = reader, screen, project

    def on_mount(self) -> None:
        self.push_screen(self.first, lambda _: self.exit())
