"""Which processes on this machine may be writing a SQLite store now: the test of a run still going.

A run has no end row until its writer writes one; a writer killed (`kill -9`, a crash, the machine
off) leaves it "running" forever. zymi leaves no pid or lock of its own per run, so what is observed
is what every writer of the store shows, zymi's and ours alike:

- it holds the store open: its SQLite connection has the `.db` (and in WAL mode `-wal`, `-shm`) open
  for the life of the process, read from /proc/<pid>/fd (processes of this user, or all as root);
  and in WAL mode SQLite holds a POSIX lock on the `-shm` and the `.db` for as long, listed in
  /proc/locks (any user's);
- its command line is a writing command of zymi or zymi-tui (`run`, `serve`, `resume`, `chat`, ...),
  and for `run PIPELINE` / `serve PIPELINE...` the pipelines it may write;
- it started before the run did (a process cannot have written a run older than itself).

A run with no end row is *running* while such a process is alive, else *interrupted*. A process
that may write any pipeline (`serve --all`, `chat`) keeps every older unfinished run "running": the
observation cannot tell its runs apart, and a run shown interrupted while its writer lives would be
a lie. Processes of another machine (a store on a network file system) and of other users behind
`hidepid` are not seen: their runs show interrupted.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

PROGRAMS = frozenset({"zymi", "zymi-tui", "zymi_tui"})
WRITING_COMMANDS = frozenset({"run", "serve", "resume", "chat", "demo", "serve-web"})
# a process's start, as wall-clock time: now less the time since it started (/proc/uptime and its start
# in clock ticks since boot, 10 ms each), so a clock stepped since boot does not move it. A writer
# starts well before its run's first row (the interpreter, the imports, the project read: 100 ms and
# more), so the slack only covers those two 10 ms readings
START_SLACK_NS = 50_000_000


@dataclass(frozen=True, slots=True)
class Writer:
    """A live process that may be writing the store."""

    pid: int
    started_ns: int  # wall clock, within START_SLACK_NS
    command: str  # its writing command (`run`, `serve`, ...)
    pipelines: frozenset[str] | None  # the pipelines it may write; None: any

    def may_write(self, pipeline: str, started_ns: int) -> bool:
        """Whether this process may be the writer of a run of `pipeline` started at `started_ns`."""
        if self.started_ns > started_ns + START_SLACK_NS:
            return False
        return self.pipelines is None or pipeline in self.pipelines or pipeline == "?"


def _store_files(db: Path) -> list[Path]:
    return [db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}-journal")]


def _identities(db: Path) -> set[tuple[int, int, int]]:
    """(device major, minor, inode) of the store's files that exist."""
    out = set()
    for f in _store_files(db):
        with contextlib.suppress(OSError):
            st = f.stat()
            out.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    return out


_LOCK = re.compile(r"^\d+:\s+(?:->\s+)?\S+\s+\S+\s+\S+\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s", re.MULTILINE)


def _lock_holders(ids: set[tuple[int, int, int]]) -> set[int]:
    """Pids holding a lock on one of the files (/proc/locks: device as hex major:minor, inode)."""
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return set()
    return {
        int(pid) for pid, major, minor, ino in _LOCK.findall(text) if (int(major, 16), int(minor, 16), int(ino)) in ids
    }


def _opened_by(pid: int, paths: set[str]) -> bool:
    """Whether process `pid` has one of `paths` open (False when its fds cannot be read)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in paths:
                return True
    return False


def _argv(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def writing_command(argv: list[str]) -> tuple[str, frozenset[str] | None] | None:
    """(command, pipelines it may write, None for any) when `argv` runs a writing command of zymi or
    zymi-tui, directly or through a Python interpreter; None otherwise."""
    args = list(argv)
    if args and os.path.basename(args[0]).startswith("python"):
        args.pop(0)
        while args and args[0].startswith("-") and args[0] != "-m":
            del args[: 2 if args[0] in ("-X", "-W") else 1]  # interpreter options (two take a value)
        if args[:1] == ["-m"]:
            args.pop(0)
    if not args or os.path.basename(args[0]) not in PROGRAMS:
        return None
    words = [a for a in args[1:] if not a.startswith("-")]
    if not words or words[0] not in WRITING_COMMANDS:
        return None
    command, rest = words[0], words[1:]
    if command == "run" and rest:
        return command, frozenset(rest[:1])
    if command == "serve" and rest and "--all" not in args:
        return command, frozenset(rest)
    return command, None  # resume, chat, serve --all: any pipeline (resume: its fork's)


def _boot_ns() -> int:
    """When the machine booted, as wall-clock time now sees it."""
    uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    return time.time_ns() - int(uptime_s * 1e9)


def _started_ns(pid: int, boot_ns: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    ticks = int(stat[stat.rindex(")") + 2 :].split()[19])  # field 22, starttime
    return boot_ns + ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def store_writers(db: Path) -> list[Writer] | None:
    """The live processes of this machine (this one aside) that may be writing the SQLite store `db`;
    None when this cannot be observed (no /proc)."""
    if not Path("/proc/self/fd").is_dir():
        return None
    real = db.resolve()
    paths = {str(p) for p in _store_files(real)}
    holders = _lock_holders(_identities(real))
    me = os.getpid()
    try:
        boot = _boot_ns()
    except (OSError, ValueError, IndexError):
        return None
    out: list[Writer] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        command = writing_command(_argv(pid))
        if command is None or not (pid in holders or _opened_by(pid, paths)):
            continue
        started = _started_ns(pid, boot)
        if started is not None:
            out.append(Writer(pid, started, *command))
    return out
