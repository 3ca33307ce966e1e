"""The knob editor's diff table: rows of display text drawn line by line (`render_line`), each row's
line kept until that row changes. A knob edit changes a few rows of the table; a `DataTable` drew
every visible row again (its line rendering was the largest part of painting an edit)."""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

Row = tuple[str, ...]  # one row's cells, display text already (cleaned of controls)


class DiffTable(ScrollView, can_focus=False):
    """A header and rows of text cells, each column as wide as its widest cell; the first column
    coloured by its value (`colours`)."""

    DEFAULT_CSS = """
    DiffTable { height: 1fr; overflow-x: auto; overflow-y: auto; }
    DiffTable > .diff-table--header { text-style: bold; background: $panel; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"diff-table--header"}

    def __init__(self, labels: Row, colours: dict[str, str], **kw: str) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.labels, self.colours = labels, colours
        self.rows: list[Row] = []
        self.widths = [cell_len(label) for label in labels]
        self._lines: dict[int, Strip] = {}  # a row's line (the header: -1), kept until it changes

    def show(self, rows: list[Row]) -> None:
        """Show these rows: the lines of the rows that changed are made again, and drawn."""
        widths = [max([cell_len(label), *(cell_len(row[n]) for row in rows)]) for n, label in enumerate(self.labels)]
        if widths != self.widths:
            self._lines.clear()
        else:
            for i in range(max(len(rows), len(self.rows))):
                if i >= len(rows) or i >= len(self.rows) or rows[i] != self.rows[i]:
                    self._lines.pop(i, None)
        self.rows, self.widths = rows, widths
        self.virtual_size = Size(sum(w + 2 for w in widths), len(rows) + 1)
        self.refresh()

    def _line(self, index: int) -> Strip:
        strip = self._lines.get(index)
        if strip is None:
            base = self.rich_style
            cells = self.labels if index < 0 else self.rows[index]
            head = base + self.get_component_rich_style("diff-table--header") if index < 0 else base
            line: list[Segment] = []
            for n, (text, width) in enumerate(zip(cells, self.widths, strict=True)):
                style = head
                if n == 0 and index >= 0 and text in self.colours:
                    style = base + Style.parse(self.colours[text])
                line.append(Segment(f" {text}{' ' * (width - cell_len(text))} ", style))
            strip = self._lines[index] = Strip(line)
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        index = -1 if y == 0 else scroll_y + y - 1  # the header stays on top
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        return self._line(index).crop_extend(scroll_x, scroll_x + width, self.rich_style)
