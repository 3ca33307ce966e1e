"""Where LHAR sessions are written: context-lens reads one session per file (the last `session` line
of a file wins), so each conversation gets a file of its own in a folder, or stdout / one file when
the export holds a single conversation. Files are written as entries come (a few kept open, each
with a buffer of its own), in the UTF-8 bytes the entries are made in."""

from __future__ import annotations

import re
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from zymi_tui.errors import UserError
from zymi_tui.telemetry.lhar_entry import LharEntry
from zymi_tui.telemetry.lhar_text import json_line, session_line

OPEN_FILES = 32  # files kept open at once (a store of many runs writes many files)
FILE_BUFFER = 1 << 16  # bytes gathered before a write to a file (32 open: 2 MB)


class LharTargetError(UserError):
    title = "LHAR export"


@dataclass(frozen=True)
class LharTarget:
    path: Path | None  # None: stdout
    folder: bool  # one file per session in `path`


def lhar_target(output: str | None, sessions: int) -> LharTarget:
    """Where `sessions` sessions go: refused when several would share one file (context-lens keeps the last)."""
    if output is not None and (output.endswith(("/", "\\")) or Path(output).is_dir()):
        return LharTarget(Path(output), True)
    if sessions > 1:
        where = "stdout" if output is None else output
        raise LharTargetError(
            f"{sessions} sessions (conversations) to export and context-lens reads one per file: give -o FOLDER "
            f"for one .lhar file per session, or -r RUN, instead of {where}"
        )
    return LharTarget(Path(output) if output is not None else None, False)


def opening_line(conversation: str, model: str, first: LharEntry) -> dict[str, Any]:
    """A session's line, written before its first entry (started when that entry was)."""
    return session_line(conversation, None, model) | {"started_at": first.timestamp}


def file_name(conversation: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", conversation).strip("._") or "session"


class LharFiles:
    """Writes each session's line before its first entry, to the session's file."""

    def __init__(self, target: LharTarget, model: str) -> None:
        self.target, self.model = target, model
        self.open: OrderedDict[str, BinaryIO] = OrderedDict()
        self.stdout: BinaryIO | None = None
        self.started: set[str] = set()
        self.entries = 0
        if target.folder and target.path is not None:
            try:
                target.path.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise LharTargetError(f"-o {target.path}: cannot make the folder ({e.strerror or e})") from None

    def _path(self, conversation: str) -> Path | None:
        if self.target.path is None:
            return None
        return self.target.path / f"{file_name(conversation)}.lhar" if self.target.folder else self.target.path

    def _file(self, conversation: str) -> BinaryIO:
        f = self.open.get(conversation)
        if f is not None:
            self.open.move_to_end(conversation)
            return f
        path = self._path(conversation)
        if path is None:
            if self.stdout is None:  # stdout's bytes, after what was printed on it so far
                sys.stdout.flush()
                self.stdout = open(sys.stdout.fileno(), "wb", buffering=FILE_BUFFER, closefd=False)  # noqa: SIM115
            return self.stdout
        try:
            f = path.open("ab" if conversation in self.started else "wb", buffering=FILE_BUFFER)
        except OSError as e:
            raise LharTargetError(f"{path.resolve()}: cannot write ({e.strerror or e})") from None
        self.open[conversation] = f
        if len(self.open) > OPEN_FILES:
            self.open.popitem(last=False)[1].close()
        return f

    def write(self, entry: LharEntry) -> None:
        conversation = entry.conversation
        f = self._file(conversation)
        if conversation not in self.started:
            self.started.add(conversation)
            f.write(json_line(opening_line(conversation, self.model, entry)))
        f.write(entry.line)
        self.entries += 1

    def close(self) -> None:
        for f in self.open.values():
            f.close()
        self.open.clear()
        if self.stdout is not None:
            self.stdout.close()
            self.stdout = None

    def summary(self) -> str:
        where = self.target.path.resolve() if self.target.path is not None else "stdout"
        if self.target.folder:
            return f"wrote {len(self.started)} session file(s), {self.entries} entries, in {where}"
        return f"wrote {self.entries} entries to {where}"
