"""A run's fork lineage as the run-info line shows it (light: drawn with the first runs list).

The fork screens and their hooks (`tui/resume/`) import the engine; this module does not, so the
dashboard shows a run's lineage without loading them.
"""

from __future__ import annotations

from rich.text import Text

from zymi_tui.events.runs import RunSummary
from zymi_tui.tui.model import RunsModel
from zymi_tui.tui.safe_text import clean


def forks_of(runs: RunsModel, stream_id: str) -> list[RunSummary]:
    """Runs forked from `stream_id`, newest first (the summaries are newest first)."""
    return [s for s in runs.summaries if s.fork is not None and s.fork.parent_stream_id == stream_id]


def lineage_text(runs: RunsModel, summary: RunSummary) -> Text:
    """The run-info line: where a fork comes from, or how many forks a run has (`P` jumps)."""
    t = Text()
    if summary.fork is not None:
        t.append(
            "\n" + clean(f"↩ fork of {summary.fork.parent_stream_id} at '{summary.fork.fork_at_step}'"), style="magenta"
        )
        t.append("  (P parent · C compare)", style="dim")
    elif (forks := forks_of(runs, summary.stream_id)) and summary.turn == 1:
        t.append("\n" + clean(f"↪ {len(forks)} fork(s), newest {forks[0].stream_id}"), style="magenta")
        t.append("  (P newest fork · C compare)", style="dim")
    return t
