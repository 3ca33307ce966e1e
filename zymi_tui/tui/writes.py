"""Where the screens write what the user asks for (exports, screenshots), and how they say so.

One folder for all of them: `$ZYMI_TUI_EXPORT_DIR` when set, else the folder the command was started in.
A folder that is missing is created; one that cannot be written (or a start folder removed since) gives way
to `~/zymi-tui-exports`, created. Either way the notification says which, and names every file in full.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

EXPORT_DIR_ENV = "ZYMI_TUI_EXPORT_DIR"
FALLBACK = "zymi-tui-exports"


def _usable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def export_folder() -> tuple[Path, str]:
    """The folder to write into (it exists on return), and a note when it was created or chosen instead."""
    wanted = os.environ.get(EXPORT_DIR_ENV)
    try:
        first = Path(wanted).expanduser().resolve() if wanted else Path.cwd()
    except OSError:  # the folder the command started in was removed since
        first = None
    if first is not None and _usable(first):
        return first, ""
    if first is not None and wanted:
        try:
            first.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass
        else:
            if _usable(first):
                return first, f" (created {first})"
    fallback = Path.home() / FALLBACK
    fallback.mkdir(parents=True, exist_ok=True)
    why = "the start folder is gone" if first is None else f"{first} cannot be written"
    return fallback, f" ({why}: written in {fallback} instead)"


def write_files(files: Sequence[tuple[str, Callable[[], str]]]) -> str:
    """Write each (file name, text maker) into the export folder; the line that says what was written,
    full paths first. Raises OSError (with the path in its filename) when one cannot be written."""
    folder, note = export_folder()
    written = []
    for name, make in files:
        path = folder / name
        path.write_text(make(), encoding="utf-8")
        written.append(str(path))
    return "wrote " + ", ".join(written) + note


def failed_line(e: OSError) -> str:
    where = e.filename if e.filename else "the export folder"
    return f"cannot write {where}: {e.strerror or e}"
