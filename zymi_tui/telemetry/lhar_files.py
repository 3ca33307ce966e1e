"""Where LHAR sessions are written: context-lens reads one session per file (the last `session` line
of a file wins), so each conversation gets a file of its own in a folder, or stdout / one file when
the export holds a single conversation. Files are written as entries come (a few kept open, each
with a buffer of its own), in the UTF-8 bytes the entries are made in."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from zymi_tui.errors import UserError
from zymi_tui.file_swap import SetAside, is_new_like, kept_if_same, lstat_or_none, new_file_mode, write_all
from zymi_tui.telemetry.lhar_entry import LharEntry
from zymi_tui.telemetry.lhar_text import json_line, session_line

OPEN_FILES = 32  # files kept open at once (a store of many runs writes many files)
FILE_BUFFER = 1 << 16  # bytes gathered before a write to a file (32 open: 2 MB)
# a hidden folder of an export in its target folder (then the caller's pid, "-" and a random tail): the
# files an earlier export left, set aside (`SetAside`), or a partner's files (commands/lhar_pair.py)
PARTS_PREFIX = ".zymi-tui-lhar-part-"


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


class _Pending:
    """A session's file while it is among the `OPEN_FILES` latest written: its descriptor (None until its
    bytes are first written out) and the bytes gathered for it."""

    __slots__ = ("chunks", "fd", "size")

    def __init__(self) -> None:
        self.fd: int | None = None
        self.chunks: list[bytes] = []
        self.size = 0


class LharFiles:
    """Writes each session's line before its first entry, to the session's file: a file is opened when
    its first `FILE_BUFFER` bytes are gathered (or it leaves the latest, or the export ends), and
    written with `os.write` (three system calls for a small session's file: open, write, close).
    A session whose bytes are all gathered before its file is first written (it is closed: a session
    under `FILE_BUFFER`) and that an earlier export's file of the same name in folder `earlier` holds
    exactly is not written: that file is kept (`kept_if_same`). `earlier` is `target`'s folder by
    default; another (a partner's) makes `target` a folder of this export's own, new (nothing in it to
    set aside)."""

    def __init__(self, target: LharTarget, model: str, earlier: Path | None = None) -> None:
        self.target, self.model = target, model
        self.earlier = earlier if earlier is not None else target.path if target.folder else None
        self.open: OrderedDict[str, _Pending] = OrderedDict()
        self.started: set[str] = set()
        self.entries = 0
        self.others = 0  # session files another process wrote in the folder for this export (`add_written`)
        self.new_mode = new_file_mode()
        self.aside = SetAside(self._aside_folder)  # the files an earlier export left, a folder's
        if target.folder and target.path is not None:
            try:
                target.path.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise LharTargetError(f"-o {target.path}: cannot make the folder ({e.strerror or e})") from None

    def _path(self, conversation: str) -> Path | None:
        if self.target.path is None:
            return None
        return self.target.path / f"{file_name(conversation)}.lhar" if self.target.folder else self.target.path

    def _aside_folder(self) -> str:
        assert self.target.path is not None
        return tempfile.mkdtemp(prefix=f"{PARTS_PREFIX}{os.getpid()}-", dir=self.target.path)

    def _opened(self, conversation: str, old: os.stat_result | None = None) -> int:
        """The session's file opened for writing; `old`: the `os.lstat` of an earlier export's file of its
        name in `earlier` (None: none, or the session was started)."""
        path = self._path(conversation)
        if path is None:  # stdout's bytes, after what was printed on it so far
            sys.stdout.flush()
            return sys.stdout.fileno()
        started = conversation in self.started
        if not started and self.earlier == self.target.path and is_new_like(old, self.new_mode):
            self.aside.put(path)  # a new file in its place: as it truncated, with nothing to wait for (or truncated)
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_APPEND if started else os.O_TRUNC)
        try:
            return os.open(path, flags, 0o666)
        except OSError as e:
            raise LharTargetError(f"{path.resolve()}: cannot write ({e.strerror or e})") from None

    def _write_out(self, conversation: str, p: _Pending, *, last: bool = False) -> None:
        """`last`: its file is closed after this (all of its bytes gathered, when it was not opened yet)."""
        data = b"".join(p.chunks)
        if p.fd is None:
            old = earlier = None
            if self.earlier is not None and conversation not in self.started:
                earlier = self.earlier / f"{file_name(conversation)}.lhar"
                old = lstat_or_none(earlier)
            if last and earlier is not None and kept_if_same(earlier, old, data, self.new_mode):
                self.started.add(conversation)
                p.chunks.clear()
                p.size = 0
                return
            p.fd = self._opened(conversation, old)
            self.started.add(conversation)
        write_all(p.fd, data)
        p.chunks.clear()
        p.size = 0

    def _close(self, conversation: str, p: _Pending) -> None:
        try:
            if p.chunks:
                self._write_out(conversation, p, last=True)
        finally:
            if p.fd is not None and self._path(conversation) is not None:
                os.close(p.fd)

    def write(self, entry: LharEntry) -> None:
        conversation = entry.conversation
        p = self.open.get(conversation)
        if p is None:
            p = self.open[conversation] = _Pending()
            if conversation not in self.started:
                p.chunks.append(json_line(opening_line(conversation, self.model, entry)))
            if len(self.open) > OPEN_FILES:
                self._close(*self.open.popitem(last=False))
        else:
            self.open.move_to_end(conversation)
        p.chunks.append(entry.line)
        p.size += len(entry.line)
        if p.size >= FILE_BUFFER:
            self._write_out(conversation, p)
        self.entries += 1

    def close(self) -> None:
        try:
            while self.open:
                self._close(*self.open.popitem(last=False))
        finally:
            for conversation, p in self.open.items():  # after a failed write: the others' files are let go
                if p.fd is not None and self._path(conversation) is not None:
                    os.close(p.fd)
            self.open.clear()
            self.aside.close()

    def append(self, conversation: str, lines: BinaryIO) -> None:
        """Append `lines`, entries of a session this export started (its file closed), to its file."""
        fd = self._opened(conversation)
        try:
            while chunk := lines.read(FILE_BUFFER << 4):
                write_all(fd, chunk)
                self.entries += chunk.count(b"\n")  # (a JSON line holds no other newline)
        finally:
            if self._path(conversation) is not None:
                os.close(fd)

    def add_written(self, sessions: int, entries: int) -> None:
        """Count, in the summary, `sessions` files of `entries` entries another process wrote in the folder."""
        self.others += sessions
        self.entries += entries

    def summary(self) -> str:
        where = self.target.path.resolve() if self.target.path is not None else "stdout"
        if self.target.folder:
            return f"wrote {len(self.started) + self.others} session file(s), {self.entries} entries, in {where}"
        return f"wrote {self.entries} entries to {where}"
