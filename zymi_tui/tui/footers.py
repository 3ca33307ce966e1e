"""The screens' footers: key hints shown only whole (`FittingFooter`, every screen's), and rebuilt once per
burst of binding changes (`OnceFooter`, the dashboard's)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer


class FittingFooter(Footer):
    """Textual's Footer showing only the key hints that fit whole: those past the width (left of the command
    palette's hint, which stays on the right) are left out, where Textual cuts the last one mid-word
    ("^s Sa"). Every action is still in `?`/F1 and the palette. Each screen's footer is one of these."""

    def compose(self) -> ComposeResult:
        for hint in super().compose():  # shown by `fit`, once they are measured: never drawn cut for a frame
            hint.display = hint.has_class("-command-palette")
            yield hint

    async def recompose(self) -> None:
        await super().recompose()
        self.fit()

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """Show the hints, in order, while each fits whole beside the palette's; hide the rest."""
        if not self.size.width:  # not laid out yet: fitted when it is (on_resize)
            return
        container, viewport = self.size, self.app.size

        def width(hint: Widget) -> int:
            return hint.get_content_width(container, viewport) + hint.styles.gutter.width + hint.styles.margin.width

        hints = list(self.children)
        room = self.size.width - sum(width(h) for h in hints if h.has_class("-command-palette"))
        fits = True
        for hint in hints:
            if not hint.has_class("-command-palette"):
                room -= width(hint)
                fits = fits and room >= 0
                hint.display = fits


class OnceFooter(FittingFooter):
    """Textual's Footer, rebuilt once per burst of binding changes instead of once per change.

    At start-up the screen is pushed, focused and the app focused: three signals, and Textual's Footer
    rebuilds all its keys after each (every key restyled one by one, on the UI thread while the first
    runs list waits). A rebuild always shows the
    bindings as they are when it runs, so one pending rebuild serves every signal before it.
    """

    _rebuild_pending = False

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        if not self._rebuild_pending:
            self._rebuild_pending = True
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False
        await self.recompose()
