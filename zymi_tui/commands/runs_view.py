"""How `zymi-tui runs` prints: the stream id whole and on one line, whatever the width.

- Piped (stdout not a terminal): a header, then one line per run, columns padded to their longest
  value and nothing cut, in a fixed order (status, stream, turn, pipeline, started, duration, fork,
  prompt); the status is a plain word, so `awk 'NR>1 {print $2}'` gives the stream ids.
- On a terminal as wide as every column (the prompt gets at least `MIN_PROMPT` cells): a table whose
  prompt column wraps; every other column is as wide as its longest value.
- Narrower: two lines per run, the status and the whole stream id, then the rest indented (wrapping
  if it must). Ids and times are never cut; only the prompt wraps.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.console import Console, Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from zymi_tui.events.runs import RunSummary
from zymi_tui.text_safety import escape_controls

COLUMNS = ("status", "stream", "turn", "pipeline", "started", "duration", "prompt")
MIN_PROMPT = 24
GAP = 2
INDENT = 6
STATUS_STYLE = {"ok": "green", "running": "yellow", "interrupted": "magenta"}


def one_line(text: str) -> str:
    """Store text on one line and safe for a terminal: line breaks and every control escaped visibly."""
    return escape_controls(text)


def _started(r: RunSummary) -> str:
    if not r.started_ns:
        return "?"  # its request unreadable and no row after it tells the time
    return datetime.fromtimestamp(r.started_ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")


def _duration(r: RunSummary) -> str:
    return "—" if r.duration_ms is None else f"{r.duration_ms / 1000:.3f}s"


def _turn(r: RunSummary, turns: bool) -> str:
    return f"{r.turn}/{r.turns_on_stream}" if turns else str(r.turns_on_stream)


def _fork(r: RunSummary) -> str:
    return one_line(f"{r.fork.parent_stream_id}:{r.fork.fork_at_step}") if r.fork else ""


def _cells(r: RunSummary, turns: bool) -> list[str]:
    ids = (one_line(r.stream_id), one_line(r.pipeline))
    return [r.status, ids[0], _turn(r, turns), ids[1], _started(r), _duration(r), one_line(r.prompt)]


def plain_lines(runs: Sequence[RunSummary], turns: bool) -> list[str]:
    """The piped form: a header and one line per run, every value whole, the prompt last."""
    header = [*COLUMNS[:-1], "fork", "prompt"]
    rows = [[*c[:-1], _fork(r) or "-", c[-1]] for r, c in zip(runs, (_cells(r, turns) for r in runs), strict=True)]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    return ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
            for row in [header, *rows]]  # fmt: skip


def _status(r: RunSummary) -> Text:
    return Text(f"{r.glyph} {r.status}", style=STATUS_STYLE.get(r.status, "red"))


def _prompt(r: RunSummary) -> Text:
    text = Text(one_line(r.prompt))
    if r.fork:
        text = Text.assemble((f"↩ fork of {_fork(r)}  ", "magenta"), text)
    return text


def terminal_view(runs: Sequence[RunSummary], turns: bool, width: int) -> Table | Group:
    """The table when every column fits `width`, else two lines per run."""
    cells = [_cells(r, turns) for r in runs]
    status_w = max(len(COLUMNS[0]), *(len(f"{r.glyph} {r.status}") for r in runs))
    fixed = [status_w] + [max(len(COLUMNS[i]), *(len(c[i]) for c in cells)) for i in range(1, len(COLUMNS) - 1)]
    if sum(fixed) + GAP * (len(fixed)) + MIN_PROMPT <= width:
        table = Table(box=None, pad_edge=False, padding=(0, GAP, 0, 0), header_style="bold")
        for name, w in zip(COLUMNS[:-1], fixed, strict=True):
            table.add_column(name, width=w, no_wrap=True, overflow="ignore")
        table.add_column("prompt", overflow="fold", ratio=1)
        for r, c in zip(runs, cells, strict=True):
            table.add_row(_status(r), c[1], c[2], c[3], c[4], c[5], _prompt(r))
        return table
    items: list[Text | Padding] = []
    for r, c in zip(runs, cells, strict=True):
        items.append(Text.assemble(_status(r), "  ", (c[1], "bold"), no_wrap=True, overflow="ignore"))
        turn = f"turn {c[2]}" if turns else f"{c[2]} turn(s)"
        rest = Text(f"{c[3]} · {c[4]} · {c[5]} · {turn} · ", style="bright_black")
        items.append(Padding(Text.assemble(rest, _prompt(r)), (0, 0, 0, INDENT)))
    return Group(*items)


def print_runs(console: Console, runs: Sequence[RunSummary], turns: bool, title: str) -> None:
    """On a terminal: `title`, then the table (or two lines a run); piped: the plain lines only."""
    if console.is_terminal:
        console.print(Text(title, style="bold"))
        console.print(terminal_view(runs, turns, console.width), soft_wrap=False)  # the prompt wraps, never crops
        return
    for line in plain_lines(runs, turns):
        console.file.write(line + "\n")
