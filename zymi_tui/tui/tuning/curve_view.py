"""The knob editor's curve: approx_context_chars per agent call, recorded and under the edited knobs,
drawn in braille dots line by line (`render_line`). The recorded layer is kept between edits (the
recorded calls do not change, only the what-if's); plotext rebuilt the whole figure on every edit."""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from zymi_tui.tui.state.plot import human, x_ticks, y_ticks
from zymi_tui.tui.tuning.model import Curve

# the dot (dx, dy) of a braille cell (2 dots wide, 4 high) is this bit of its character (U+2800 + bits)
DOT = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
RECORDED, WHAT_IF, FAILED = Style(color="cyan"), Style(color="magenta"), Style(color="red", bold=True)
COMPACTION, PICKED = Style(color="bright_yellow"), Style(color="white", bold=True)
SOFT, HARD, AXIS = Style(color="dark_orange"), Style(color="red"), Style(color="bright_black")
Dots = list[list[int]]  # [row][cell] braille bits of the plot area


def plot_dots(ys: list[int | None], upto: int, top: float, cells: int, rows: int) -> Dots:
    """The curve of `ys[:upto]` (x = call index, y from 0 to `top`) as braille bits: each dot column
    joins the least and the greatest value of its calls and the value before (a line, spikes kept)."""
    dots = [[0] * cells for _ in range(rows)]
    n, width, height = len(ys), 2 * cells, 4 * rows
    if n == 0 or top <= 0:
        return dots
    prev: int | None = None
    for col in range(width):
        lo, hi = col * n // width, max(col * n // width + 1, (col + 1) * n // width)
        if lo >= upto:
            break
        values = [y for y in ys[lo : min(hi, upto)] if y is not None]
        if not values:
            prev = None
            continue
        low = min(values) if prev is None else min(prev, min(values))
        high = max(values) if prev is None else max(prev, max(values))
        prev = values[-1]
        first = height - 1 - min(height - 1, round(high / top * (height - 1)))
        last = height - 1 - min(height - 1, round(low / top * (height - 1)))
        cell, dx = divmod(col, 2)
        for dot in range(first, last + 1):
            row, dy = divmod(dot, 4)
            dots[row][cell] |= DOT[dx][dy]
    return dots


class CurveView(Widget):
    """The curve of one stream's agent calls: recorded, and under the edited knobs, with the caps,
    the compactions and the picked call."""

    DEFAULT_CSS = "CurveView { height: 1fr; }"

    def __init__(self, **kw: str) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.curve: Curve | None = None
        self.caps: tuple[int, int] | None = None
        self.recorded_caps: tuple[int, int] | None = None
        self.picked: int | None = None  # call index (0-based)
        self.edited = False
        self._recorded: tuple[tuple[object, ...], Dots] | None = None  # kept between edits
        self._lines: list[Strip] = []

    def show(self, curve: Curve, caps: tuple[int, int], recorded_caps: tuple[int, int], *, edited: bool) -> None:
        self.curve, self.caps, self.recorded_caps, self.edited = curve, caps, recorded_caps, edited
        self._lines = []
        self.refresh()

    def on_resize(self) -> None:
        self._lines = []
        self.refresh()

    def render_line(self, y: int) -> Strip:
        if not self._lines:
            self._lines = self._draw()
        return self._lines[y] if y < len(self._lines) else Strip.blank(self.size.width, self.rich_style)

    def _draw(self) -> list[Strip]:
        width, height = self.size.width, self.size.height
        base = self.rich_style
        c = self.curve
        if c is None or not c.sequences or width < 20 or height < 6:
            text = "no LLM calls on this stream" if c is not None and not c.sequences else ""
            return [self._centred(text, width, base)] + [Strip.blank(width, base)] * (height - 1)
        n = len(c.sequences)
        known = n if c.known is None else c.known
        top = float(max(c.recorded))
        if self.edited:
            top = max([top, *(float(y) for y in c.what_if[:known] if y is not None)])
        shown_caps: list[tuple[int, Style]] = []
        if self.caps is not None:
            shown_caps = [(cap, style) for cap, style in zip(self.caps, (SOFT, HARD), strict=True) if cap <= top * 3]
            top = max([top, *(float(cap) for cap, _ in shown_caps)])
        top = top * 1.05 or 1.0
        ticks = y_ticks(top, max(1, (height - 4) // 3))
        label_w = max(cell_len(human(t)) for t in ticks) + 1
        legend = self._legend(width, base, [style for _, style in shown_caps])
        # the plot area, between the left axis and the right frame, under the title and the legend
        cells, rows = width - label_w - 2, height - 3 - len(legend)
        key = (id(c.recorded), n, top, cells, rows)
        if self._recorded is None or self._recorded[0] != key:
            self._recorded = (key, plot_dots(list[int | None](c.recorded), n, top, cells, rows))
        recorded = self._recorded[1]
        what_if = plot_dots(c.what_if, known, top, cells, rows) if self.edited else None
        marks: dict[tuple[int, int], tuple[str, Style]] = {}  # (row, cell) -> a mark drawn where no dot is

        def x_cell(x: float) -> int:  # x: 1-based call position
            return min(cells - 1, max(0, int((x - 0.5) / n * cells)))

        def y_row(v: float) -> int:
            return rows - 1 - min(rows - 1, int(v / top * rows))

        for cap, style in shown_caps:
            for cell in range(cells):
                marks[(y_row(cap), cell)] = ("─", style)
        for x in c.compactions_what_if if self.edited else c.compactions_recorded:
            for row in range(rows):
                marks[(row, x_cell(x + 1.0))] = ("│", COMPACTION)
        if self.picked is not None and 0 <= self.picked < n:
            for row in range(rows):
                marks[(row, x_cell(self.picked + 1.0))] = ("│", PICKED)
        if self.edited:
            for i, v in enumerate(c.what_if[:known]):
                if v is None:
                    marks[(rows - 1, x_cell(i + 1.0))] = ("x", FAILED)
        tick_rows = {y_row(t): human(t) for t in ticks}
        lines = [self._centred(self._title(c, width), width, base), *legend]
        for row in range(rows):
            label = tick_rows.get(row, "")
            segments = [
                Segment(" " * (label_w - 1 - len(label)), base),
                Segment(label + ("┤" if label else "│"), base + AXIS),
            ]
            for cell in range(cells):
                bits_r, bits_w = recorded[row][cell], what_if[row][cell] if what_if is not None else 0
                if bits_r or bits_w:
                    segments.append(Segment(chr(0x2800 | bits_r | bits_w), base + (WHAT_IF if bits_w else RECORDED)))
                else:
                    char, style = marks.get((row, cell), (" ", Style()))
                    segments.append(Segment(char, base + style))
            segments.append(Segment("│", base + AXIS))  # the frame: nothing is drawn right of it
            lines.append(Strip(Segment.simplify(segments)).extend_cell_length(width, base))
        axis: list[Segment] = []
        end = 0  # cells of the axis line used so far
        for t in x_ticks(1.0, float(n), max(2, cells // 10), integer=True):
            text, at = f"{t:.0f}", x_cell(t)
            start = min(max(0, at - len(text) // 2), cells - len(text))
            if start > end or (start == end == 0):
                axis += [Segment(" " * (start - end), base), Segment(text, base + AXIS)]
                end = start + len(text)
        lines.append(Strip([Segment(" " * (label_w + 1), base), *axis]).crop_extend(0, width, base))
        lines.append(self._centred("agent call", width, base, AXIS))
        return lines

    def _title(self, c: Curve, width: int) -> str:
        """Without the what-if's caveat where it does not fit: the editor states it above the curve."""
        inferred = (
            "" if c.inferred_prefix is None else f" · Layer A inferred ≤{c.inferred_prefix:,} B (no project): estimates"
        )
        head = "context bytes per call"
        title = head + (" · what-if: same trajectory assumed" if self.edited else "") + inferred
        return title if cell_len(title) <= width else head + inferred

    def _legend(self, width: int, base: Style, caps: list[Style]) -> list[Strip]:
        """One row, or two where the items do not fit in one (each item whole: none cut off at the edge)."""
        items = [("⣿ recorded", RECORDED)]
        if self.edited:
            items.append(("⣿ what-if (estimated)", WHAT_IF))
            if self.curve is not None and any(y is None for y in self.curve.what_if):
                items.append(("x would fail the hard cap", FAILED))
        items += [("│ compaction", COMPACTION), ("│ picked", PICKED)]
        items += [(text, style) for text, style in (("─ soft cap", SOFT), ("─ hard cap", HARD)) if style in caps]
        rows: list[list[Segment]] = [[]]
        for text, style in items:
            used = sum(cell_len(s.text) for s in rows[-1])
            if rows[-1] and used + 1 + cell_len(text) > width and len(rows) < 2:
                rows.append([])
            rows[-1] += [Segment(" ", base), Segment(text, base + style)]
        return [Strip(segments).crop_extend(0, width, base) for segments in rows]

    @staticmethod
    def _centred(text: str, width: int, base: Style, style: Style | None = None) -> Strip:
        pad = max(0, (width - cell_len(text)) // 2)
        return Strip([Segment(" " * pad, base), Segment(text, base + style)]).crop_extend(0, width, base)
