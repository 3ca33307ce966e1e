"""No silent failure: what a screen does when one of its workers raises, and what the app does when it dies.

A worker that fails posts `Worker.StateChanged(ERROR)`; every `ActionScreen` handles it here: the
panel that worker was filling (the screen's `FAILURE_PANELS`, worker group -> widget id) shows one
clear line in its place, a notification says the same, and the rest of the app stays usable. A
`UserError` shows its title, message and hint; anything else is a bug: its traceback goes to the
log file, whose path the line names.

If the app itself dies, `SafeApp` (tui/safe_text.py) writes the traceback to the same log and leaves
one line on stderr naming the error and the log file; the command exits non-zero.
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

from textual.widget import Widget
from textual.widgets import Static

from zymi_tui.errors import UserError
from zymi_tui.tui.safe_text import clean, safe_text


def log_dir() -> Path:
    """Where tracebacks go: $ZYMI_TUI_LOG_DIR, else $XDG_STATE_HOME/zymi-tui, else ~/.local/state/zymi-tui."""
    if os.environ.get("ZYMI_TUI_LOG_DIR"):
        return Path(os.environ["ZYMI_TUI_LOG_DIR"])
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "zymi-tui"


def write_log(error: BaseException, what: str) -> Path | None:
    """Append the traceback of `error` to today's log file; the file's path, or None if it cannot be written."""
    folder = log_dir()
    path = folder / f"zymi-tui-{time.strftime('%Y%m%d')}.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {what}\n")
            f.write("".join(traceback.format_exception(error)))
    except OSError:
        return None
    return path


def failure_line(error: BaseException, what: str) -> tuple[str, str]:
    """(title, one line) for a failure: a UserError's own words, or the exception and where its traceback is."""
    if isinstance(error, UserError):
        return error.title, error.one_line()
    log = write_log(error, what)
    where = f"traceback in {log}" if log else "the log file could not be written"
    return "Unexpected error", f"{what} failed: {type(error).__name__}: {error} ({where})"


def show_in_panel(widget: Widget, line: str) -> None:
    """Put the failure line where the panel's content was."""
    shown = getattr(widget, "show_problem", None)
    if callable(shown):
        shown(line)
    elif isinstance(widget, Static):
        widget.update(safe_text(f"⚠ {line}", "bold red"))
    else:
        widget.border_subtitle = clean(f"⚠ {line}", one_line=True, max_cells=max(widget.size.width - 4, 10))
