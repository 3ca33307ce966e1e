"""Processes a test session left behind, read from /proc (no psutil).

The pytest process is made a child subreaper (Linux `prctl(PR_SET_CHILD_SUBREAPER)`), so a process
whose parent died before it (a server's child when the test killed the server, a shell's background
job) is re-parented to pytest instead of to init, and stays in view: every live process below pytest
is one the session started. Zombies (exited, not yet waited for) are not counted: they hold nothing;
those re-parented here are waited for (`reap_orphans`), since nothing else would.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_cleanups: list[Callable[[], object]] = []
_spared: list[str] = []


def at_session_end(cleanup: Callable[[], object]) -> None:
    """Run `cleanup` when the session ends, before the leftover check (a server started once for the
    whole session, such as the Postgres tests' one, is stopped there, not after the check at exit)."""
    _cleanups.append(cleanup)


def run_session_cleanups() -> None:
    while _cleanups:
        with contextlib.suppress(Exception):
            _cleanups.pop()()


def become_subreaper() -> bool:
    """Orphans of this process's descendants become its children; False where the kernel says no."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def die_with_parent() -> None:
    """For `Popen(preexec_fn=...)`: the child is sent SIGKILL when the thread that started it ends, even when
    that is pytest killed outright (a CI timeout), where no `finally` stops a server; a no-op where the
    kernel says no."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _processes() -> Iterator[tuple[int, list[str]]]:
    """Every process and its /proc/<pid>/stat fields after the command (state, ppid, pgrp, ...)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        yield int(entry), stat[stat.rindex(")") + 2 :].split()


def _live() -> Iterator[tuple[int, list[str]]]:
    """Every live, non-zombie process and its /proc/<pid>/stat fields."""
    return ((pid, fields) for pid, fields in _processes() if fields[0] not in ("Z", "X"))


def reap_orphans() -> list[int]:
    """Wait for this process's exited children: orphans re-parented here, such as a sandbox's init that
    outlived its bwrap by a moment (`bwrap_problem`'s probe, a killed shell), which no `Popen` of this
    process knows, so nothing else would wait for them. Called between tests: a child a test started
    itself is waited for by that test (were it not, its `Popen` would read exit code 0)."""
    me = os.getpid()
    reaped: list[int] = []
    for pid, fields in _processes():
        if fields[0] == "Z" and int(fields[1]) == me:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0]:
                    reaped.append(pid)
    return reaped


def _parents() -> dict[int, int]:
    """Every live, non-zombie process's parent."""
    return {pid: int(fields[1]) for pid, fields in _live()}


def group(pgid: int) -> list[int]:
    """The live, non-zombie processes of process group `pgid`."""
    return [pid for pid, fields in _live() if int(fields[2]) == pgid]


def command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "(gone)"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip() or "(no command line)"


def descendants(root: int | None = None) -> set[int]:
    """The live processes below `root` (default: this one), at any depth."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [os.getpid() if root is None else root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def spare(program: str) -> None:
    """Leave processes of `program` (their command's first word, without its folder, starts with it) to the
    session's end: a server a test starts for the whole session, such as the Postgres tests' one."""
    _spared.append(program)


# Python's own helpers, started once by the process that needs them and ended with it (a multiprocessing
# pool's resource tracker lives until pytest exits: killing it breaks every later pool of the session)
_INTERPRETER_HELPERS = (
    "from multiprocessing.resource_tracker import main",
    "from multiprocessing.forkserver import main",
)


def _is_spared(cmd: str) -> bool:
    return os.path.basename(cmd.split(" ", 1)[0]).startswith(tuple(_spared))


def _is_interpreter_helper(pid: int, cmd: str) -> bool:
    return any(h in cmd for h in _INTERPRETER_HELPERS) and _parents().get(pid) == os.getpid()


def left_behind(wait_s: float, *, ignore: set[int] | None = None, spared: bool = False) -> dict[int, str]:
    """The processes still below this one after up to `wait_s` seconds (those exiting are given the
    time), with their command lines, except those in `ignore` and (`spared`) those of spared programs;
    each is then killed."""
    deadline = time.monotonic() + wait_s
    while True:
        found = {pid: command_line(pid) for pid in descendants() - (ignore or set())}
        found = {pid: cmd for pid, cmd in found.items() if not _is_interpreter_helper(pid, cmd)}
        if spared:
            found = {pid: cmd for pid, cmd in found.items() if not _is_spared(cmd)}
        if not found or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found
