"""`zymi-tui tune`: the tuning screens on their own (the dashboard can push the same screens)."""

from __future__ import annotations

from collections.abc import Callable

from textual.screen import Screen

from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.tui.base_app import SafeApp

ScreenFactory = Callable[[EventReader], Screen[None]]


class TuningApp(SafeApp):
    """Opens the store read-only, then one tuning screen; closing the screen quits."""

    TITLE = "zymi-tui tune"

    def __init__(self, store: StoreLocation, make_screen: ScreenFactory) -> None:
        super().__init__()
        self.store, self.make_screen = store, make_screen
        self.reader: EventReader | None = None

    async def on_mount(self) -> None:
        self.reader = await open_reader(self.store)
        self.push_screen(self.make_screen(self.reader), lambda _: self.exit())

    async def on_unmount(self) -> None:
        if self.reader is not None:
            await self.reader.close()
