"""An export of a large SQLite store of many runs by two processes, whatever its format: the store is
cut where nothing crosses (`clean_cuts`), the caller exports the first part and a process of its own
(`Partner`: `python -m MODULE ARGS... OUT_FD CALLER_PID`) the rest at the same time, its output in a
temporary file the caller reads once it takes the partner's part (`Partner.hand_over`).

The caller takes it only when its own walk holds nothing open at the cut and the partner ended with
status 0 (it read every row of its part); otherwise the partner is ended and the caller goes on past
the cut itself, so the output is always the one process's. The partner looks at its parent every
`CALLER_LOOKS` events (`CallerWatch`) and stops once it is not its caller (the caller was killed).

The partner is started by `fork()` where that is safe (`forkable`: a POSIX system, this thread the
process's only one, the reader's SQLite connection closed meanwhile: `SqliteReader.released`) and
pays (a store below `FORK_BELOW` ids), so it starts with the caller's modules loaded (a new
interpreter and its imports: ~450 M instructions); else, or with `SPAWN_ENV` set, by `python -m
MODULE` as before. Either way it runs `MODULE.main(ARGS)`."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

from zymi_tui import GC_THRESHOLD
from zymi_tui.cores import usable_cores
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import EventReader, StreamInfo
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_ends import LONG_STREAM, StreamEnds
from zymi_tui.replay.store_ranges import Span, clean_cuts
from zymi_tui.telemetry.export_calls import HandOver, walk

PAIR_EVENTS = 20_000  # a store whose ids reach this is exported by two processes (below, a process costs more)
DECLINED = 3  # the partner's status when it skipped an unreadable row: the caller exports that part itself
ORPHANED = 4  # the partner's status when it found its caller gone
CALLER_LOOKS = 2_000  # events between two looks of the partner at its caller
SPAWN_ENV = "ZYMI_TUI_PAIR_SPAWN"  # set: the partner is started as a new interpreter, never forked
# a store whose last id reaches this gets a spawned partner: a forked one maps the caller's heap at the
# fork and writes into its free blocks (many_1m: the partner's peak RSS 58 -> 76 MB, its private memory
# 46 -> 57 MB), while a new interpreter's start-up is ~1% of such an export (at 100k ids, ~17%)
FORK_BELOW = 300_000


def pairs(top: int, events_env: str) -> bool:
    """Whether a store whose last id is `top` is exported by two processes: from PAIR_EVENTS ids (or the
    environment variable `events_env`'s count, which the tests lower), on two usable cores."""
    return top >= max(int(os.environ.get(events_env, PAIR_EVENTS)), 2) and usable_cores() >= 2


def pair_cut(
    streams: Sequence[StreamInfo], events_env: str, caller_extra: Callable[[], Mapping[str, int]] | None = None
) -> tuple[int, int] | None:
    """(cut, last id): where a store of these `streams` is cut in two for two processes, and the last id
    the walk reads; None when one process exports it (not `pairs`, or no place where no stream crosses:
    `clean_cuts`). The cut balances the two: the caller's ids, plus the ids' worth of work that
    `caller_extra` gives a stream (by its id) when the stream is the caller's, against the partner's ids
    (without it, the cut nearest the middle id, as `store_ranges`' two ranges)."""
    live = [s for s in streams if s.count]

    def costs() -> list[tuple[int, int]]:
        extra = caller_extra() if caller_extra is not None else {}
        return [(s.last_global_id, extra[s.stream_id]) for s in live if s.stream_id in extra]

    return spans_cut([(s.first_global_id, s.last_global_id) for s in live], events_env, costs)


def spans_top(spans: list[Span]) -> int:
    """The last global id of the streams' (first global id, last global id): the store's last (0: none)."""
    return max((last for _, last in spans), default=0)


def spans_cut(
    spans: list[Span],
    events_env: str,
    costs: Callable[[], list[tuple[int, int]]] | None = None,
    top: int | None = None,
) -> tuple[int, int] | None:
    """`pair_cut` of the streams' (first global id, last global id) (`SqliteReader.stream_spans`), `costs`
    giving (a stream's last global id, the ids' worth of work the caller pays for it beyond its ids), asked
    only when the store pairs; `top`: their `spans_top`, when the caller has it."""
    if top is None:
        top = spans_top(spans)
    if not pairs(top, events_env):
        return None
    cuts = clean_cuts(spans)
    if not cuts:
        return None
    paid_by = sorted(costs()) if costs is not None else []
    best, best_gap, paid, k = 0, -1, 0, 0
    for cut in cuts:  # |caller - partner| = |cut + paid - (top - cut)|, in halves of an id: as store_ranges
        while k < len(paid_by) and paid_by[k][0] <= cut:
            paid += paid_by[k][1]
            k += 1
        gap = abs(2 * cut + paid - 2 * (top // 2))
        if best_gap < 0 or gap < best_gap:
            best, best_gap = cut, gap
    return best, top


class Partner:
    """The process exporting the store's ids (after, until]: `module.main([*args, OUT_FD, CALLER_PID])`,
    writing its output to `out`, an unlinked file in `tmp` (None: the system's temporary folder), forked
    when `reader` can let go of its connection meanwhile (`forked`), else spawned."""

    def __init__(
        self, module: str, args: Sequence[str], after: int, until: int, reader: EventReader, tmp: Path | None = None
    ) -> None:
        self.after, self.until = after, until
        self.taken = False  # its output is the rest of the export
        self.out = _temporary(tmp)
        fd = self.out.fileno()
        argv = [*args, str(fd), str(os.getpid())]  # the caller: the partner stops once its parent is another
        released = None
        if isinstance(reader, SqliteReader) and until < FORK_BELOW and forkable():
            released = reader.released()
        self.forked = released is not None
        self.proc: subprocess.Popen[bytes] | Forked
        try:
            if released is not None:
                with released:
                    self.proc = Forked(module, argv)
            else:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", module, *argv],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,  # a failure is the caller's to meet again, going on itself
                    pass_fds=(fd,),
                    start_new_session=True,  # Ctrl-C is the caller's to handle: it ends this process
                )
        except BaseException:
            self.out.close()
            raise

    def hand_over(self, holds_nothing_open: Callable[[], bool]) -> HandOver:
        """The caller's walk ends at the cut when its builder `holds_nothing_open` there and the partner
        wrote every piece of its part (then `taken`)."""

        def take() -> bool:
            self.taken = holds_nothing_open() and self.proc.wait() == 0
            if not self.taken:  # the caller goes on alone: the core is its own again
                self.end()
            return self.taken

        return HandOver(self.after, take)

    def end(self) -> None:
        """End the partner (at once if it is still running)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        """End the partner and drop its file."""
        self.end()
        self.out.close()


def _temporary(folder: Path | None) -> BinaryIO:
    """An unlinked temporary file in `folder` (one that cannot hold one: the system's temporary folder)."""
    if folder is not None:
        with contextlib.suppress(OSError):
            return tempfile.TemporaryFile(prefix=".zymi-tui-part-", dir=folder)
    return tempfile.TemporaryFile(prefix="zymi-tui-part-")


def forkable() -> bool:
    """Whether the partner may be forked: a POSIX system, `SPAWN_ENV` unset, and no thread but this one
    (a lock that another thread held at the fork would stay held in the child)."""
    if not hasattr(os, "fork") or os.environ.get(SPAWN_ENV):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1  # every thread, a C library's too
    except OSError:
        return threading.active_count() == 1


class Forked:
    """A forked partner: the child runs `module.main(argv)` in a session of its own (Ctrl-C is the
    caller's to handle) with stdin, stdout and stderr on /dev/null, and leaves by `os._exit` with its
    status (nothing of the caller's, its buffers or its files, is flushed or closed there). As much of
    `subprocess.Popen` as `Partner` asks: `poll`, `wait`, `kill`."""

    def __init__(self, module: str, argv: list[str]) -> None:
        self.returncode: int | None = None
        gc.freeze()  # the child's collections leave the caller's objects alone (their pages stay shared)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # (the child keeps it blocked)
        try:
            self.pid = os.fork()
            if self.pid == 0:
                _child(module, argv)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            gc.unfreeze()

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:  # once reaped, the pid may be another process's (Popen.kill does the same)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def _child(module: str, argv: list[str]) -> NoReturn:
    status = 1
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for std in (0, 1, 2):
            os.dup2(null, std)
        status = importlib.import_module(module).main(argv)
    finally:
        os._exit(status)


class CallerWatch:
    """The partner's looks at its parent: `gone(global_id)` is True once the parent is not `caller`."""

    def __init__(self, caller: int, after: int) -> None:
        self.caller, self.look_at = caller, after

    def gone(self, global_id: int) -> bool:
        if global_id < self.look_at:
            return False
        self.look_at = global_id + CALLER_LOOKS
        return os.getppid() != self.caller


async def walk_part(
    store: Path,
    project: Path | None,
    after: int,
    until: int,
    caller: int,
    feed: Callable[[ReplayEvent | None, list[CallContext]], None],
    *,
    reuse: bool = True,
) -> int:
    """A partner's walk of the store's ids (after, until], each event and its rows given to `feed`, while
    its parent is `caller`: its status (0; DECLINED when a row was unreadable; ORPHANED, the walk left)."""
    from zymi_tui.events.sqlite_read import SqliteReader

    reader = await SqliteReader.open(store, inline=True)
    try:
        watch = CallerWatch(caller, after)
        ends = StreamEnds(reader.stream_end, until, await reader.named_ends(LONG_STREAM, until))
        async for se, rows in walk(reader, project, after=after, until=until, reuse=reuse, ends=ends):
            feed(se, rows)
            if se is not None and watch.gone(se.global_id):  # no one will take what it made
                return ORPHANED
    finally:
        await reader.close()
    return DECLINED if reader.problems else 0


def run_partner(part: Coroutine[Any, Any, int]) -> int:
    """A partner's `main`: its export (`part`, giving its status) on an inline event loop."""
    from zymi_tui.events.sqlite_inline import run_inline

    gc.set_threshold(GC_THRESHOLD)
    with contextlib.suppress(KeyboardInterrupt):
        return run_inline(part)
    return 1
