"""Tables the CLI prints: a figure is never cut, whatever the terminal's width.

Each column is at least as wide as its widest cell and its header's longest word (headers wrap); a
table that does not fit the terminal is printed at its own width (the terminal wraps the long lines,
nothing is replaced by `…`), and piped output is always at the table's own width, so it does not depend
on COLUMNS.
"""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table


def print_table(console: Console, table: Table) -> None:
    for column in table.columns:
        cells = [Measurement.get(console, console.options, cell).maximum for cell in column.cells]
        words = [len(word) for word in str(column.header).split()]  # a header wraps between its words only
        column.min_width = max([column.min_width or 0, *cells, *words])
        column.no_wrap = False
    needed = Measurement.get(console, console.options.update(width=10**6), table).minimum
    if console.is_terminal and needed <= console.width:
        console.print(table)
    else:
        console.print(table, width=needed, crop=False)
