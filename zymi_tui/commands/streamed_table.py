"""A table printed row by row as its rows are computed: the header once, then each row in columns
of fixed width, so a million-row table holds one row in memory (a rich `Table` holds them all and
measures every cell before printing the first).

Each column starts as wide as its header and its declared width; a cell wider than its column widens
that column from that row on (the figure is never cut; rows before it keep their alignment). Columns
are separated by two spaces, the last one is not padded. On a terminal the header is bold and `Cell`
parts marked `red` are red; in a pipe or file the text is plain (no escape sequence).
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

BOLD, RED, RESET = "\x1b[1m", "\x1b[31m", "\x1b[0m"


@dataclass(frozen=True)
class Column:
    header: str
    right: bool = False  # right-justified (figures)
    width: int = 0  # the width to start with (at least the header's)


@dataclass(frozen=True)
class Cell:
    """A cell of several parts, some of them red on a terminal: ((text, red), ...)."""

    parts: tuple[tuple[str, bool], ...]

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.parts)

    def styled(self) -> str:
        return "".join(f"{RED}{text}{RESET}" if red and text else text for text, red in self.parts)


class StreamedTable:
    def __init__(self, columns: Sequence[Column], *, styled: bool, write: Callable[[str], object] | None = None):
        from rich.cells import cell_len  # here: `replay --json` imports this module, and prints no table

        self.columns = list(columns)
        self.widths = [max(c.width, cell_len(c.header)) for c in self.columns]
        self.styled = styled
        self.write = write or sys.stdout.write
        self.header_written = False
        self.rows = 0
        self._format = ""  # `_line` of ASCII cells that fit the widths as they are (remade when one widens)

    def title(self, text: str) -> None:
        """A line above the header (or between rows, when it is first known there)."""
        self.write(text + "\n")

    def header(self) -> None:
        if self.header_written:
            return
        self.header_written = True
        line = self._line([c.header for c in self.columns], [c.header for c in self.columns])
        self.write((f"{BOLD}{line}{RESET}" if self.styled else line) + "\n")

    def row(self, cells: Sequence[str | Cell]) -> None:
        self.header()
        self.rows += 1
        plain = [c.text if isinstance(c, Cell) else c for c in cells]
        # most rows: ASCII cells (one per column; red parts only off a terminal) no wider than their
        # columns, formatted in one call into the line `_line` makes
        if (
            len(plain) == len(self.widths)
            and (not self.styled or plain == cells)
            and "".join(plain).isascii()
            and all(map(operator.le, map(len, plain), self.widths))
        ):
            if not self._format:
                self._format = self._line_format()
            self.write(self._format.format(*plain).rstrip(" ") + "\n")
            return
        shown = [c.styled() if isinstance(c, Cell) and self.styled else p for c, p in zip(cells, plain, strict=True)]
        self.write(self._line(plain, shown) + "\n")

    def _line_format(self) -> str:
        """`_line` of cells that fit: each padded to its column's width (the last, left-justified, not)."""
        last = len(self.columns) - 1
        fields = [
            f"{{:>{w}}}" if c.right else "{}" if i == last else f"{{:<{w}}}"
            for i, (c, w) in enumerate(zip(self.columns, self.widths, strict=True))
        ]
        return "  ".join(fields)

    def _line(self, plain: Sequence[str], shown: Sequence[str]) -> str:
        from rich.cells import cell_len

        out = []
        last = len(self.columns) - 1
        for i, (text, styled) in enumerate(zip(plain, shown, strict=True)):
            n = len(text) if text.isascii() else cell_len(text)
            if n > self.widths[i]:
                self.widths[i] = n
                self._format = ""
            pad = " " * (self.widths[i] - n)
            if self.columns[i].right:
                out.append(pad + styled)
            else:
                out.append(styled if i == last else styled + pad)
        return "  ".join(out).rstrip(" ")
