"""`zymi-tui observe`: the dashboard (a drop-in for `zymi observe`: -r/--run, -d/--dir, --no-venv)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import pickle
import select
import signal
import struct
from collections.abc import Callable
from typing import Any

from zymi_tui.cores import usable_cores
from zymi_tui.events.factory import open_reader
from zymi_tui.events.runs import list_runs
from zymi_tui.events.store import EventReader
from zymi_tui.file_swap import write_all
from zymi_tui.malloc_arenas import cap_malloc_arenas
from zymi_tui.tui.chain_freshness import start_check
from zymi_tui.tui.launch import choose_target
from zymi_tui.tui.source import FirstRuns, RestOfRuns, first_runs
from zymi_tui.tui.target import Target

from . import modules_loading
from .common import EXIT_OK, add_project_arg, add_store_arg, close_reader, need_terminal, store_arg
from .flags import RUN_HELP, add_run_arg


def configure(command: str, p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    add_run_arg(p, RUN_HELP + ", selected at start")
    add_project_arg(p, "prefix, knobs, tools")
    p.add_argument("--theme", metavar="NAME", help="a Textual theme, e.g. textual-dark or textual-light")
    p.set_defaults(func=observe, bare=False)  # cli.main sets bare for `zymi-tui` alone


async def _open(target: Target) -> FirstRuns | None:
    """Open the store before the screen starts, so a missing or broken store is one clear line, and read
    the newest runs, listed in the first frame (not when a run is named: it may be older than those)."""
    reader = await open_reader(target.store)
    try:
        if target.run is not None:
            await reader.max_global_id()
            return None
        return await first_runs(reader)
    finally:
        await close_reader(reader)


async def _open_then_all(target: Target, send: Callable[[object], None]) -> None:
    """`_open` in the child: its result sent, then (when it is not every run) the whole list of runs
    with the rows it skipped, sent as soon as it is read (the screen may not have started yet)."""
    first = await _open(target)
    send(first)
    if first is None or first.whole:
        return
    reader = await open_reader(target.store)
    try:
        send(await _all_runs(reader))
    finally:
        reader.problems.clear()  # sent with the runs: the dashboard names them (not this child, on its screen)
        await reader.close()


async def _all_runs(reader: EventReader) -> RestOfRuns:
    last = await reader.max_global_id()
    summaries = await list_runs(reader, turns=True)
    return RestOfRuns(summaries, last, list(reader.problems))


_LENGTH = struct.Struct("<Q")


def _send(fd: int, value: object) -> None:
    try:
        data = pickle.dumps(value)
    except Exception:  # an error that does not pickle: its type and text
        data = pickle.dumps((False, RuntimeError(f"{type(value).__name__}: {value}")))
    for part in (_LENGTH.pack(len(data)), data):
        write_all(fd, part)


class _PipeFile:
    """A pipe as `pickle.load` reads a file: each read returns the bytes asked for (a pipe hands over what it
    holds), so the objects are made a frame (64 KB) at a time, never from the whole pickle held at once (read
    whole and joined, it was held twice beside them)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def read(self, n: int) -> bytes:
        parts, left = [], n
        while left > 0 and (part := os.read(self.fd, min(left, 1 << 20))):
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    def readline(self) -> bytes:  # for pickle's text opcodes, which `pickle.dumps` (protocol 4) does not write
        out = bytearray()
        while not out.endswith(b"\n") and (byte := os.read(self.fd, 1)):
            out += byte
        return bytes(out)


def _receive(fd: int) -> object | None:
    """One value `_send` wrote, or None at the end of the pipe (the child is gone)."""
    pipe = _PipeFile(fd)
    if len(pipe.read(_LENGTH.size)) < _LENGTH.size:
        return None
    try:
        value: object = pickle.load(pipe)
    except (EOFError, pickle.UnpicklingError):  # cut short: the child died while writing
        return None
    return value


class _Child:
    """`_open` in a forked child process, on the other core while this one loads the screen's modules (in a
    thread it would share the interpreter lock with the import); then, in the same child, the whole list
    of runs, so that the first frame lists every run with its status when it is read by then (99,000
    events: 0.2 s of CPU), or else the dashboard's runs worker takes it from the child when it comes."""

    def __init__(self, target: Target) -> None:
        self.source, sink = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: reads, writes the pickled outcomes, and exits without any exit handler
            try:
                os.close(self.source)
                try:
                    asyncio.run(_open_then_all(target, lambda v: _send(sink, (True, v))))
                except BaseException as e:  # its error, raised by the parent (if sent before the first value)
                    _send(sink, (False, e))
            finally:
                os._exit(0)
        os.close(sink)
        self.open = True

    def first(self) -> FirstRuns | None:
        """`_open`'s result (raises its error: a missing or broken store, its one line); with every run
        when the child has read them all by now."""
        outcome: Any = _receive(self.source) or (False, RuntimeError("the store reader died"))
        ok, value = outcome
        if not ok:
            self.stop()
            raise value
        first: FirstRuns | None = value
        if first is None or first.whole:
            self.stop()
            return first
        waiting = FirstRuns(first.summaries, False, first.last_global_id, first.skipped, self.rest, self.rest_ready)
        return waiting.settled()  # looked at again as the screen mounts (MainScreen.on_mount)

    def rest_ready(self) -> bool:
        """Whether the whole list of runs (or the end of the pipe) is there to be read without waiting."""
        return not self.open or bool(select.select([self.source], [], [], 0)[0])

    def rest(self) -> RestOfRuns | None:
        """The whole list of runs from the child (waited for), or None if it failed or was stopped."""
        if not self.open:
            return None
        got: Any = _receive(self.source)
        self.stop()
        ok, value = got if got is not None else (False, None)
        return value if ok and isinstance(value, RestOfRuns) else None

    def stop(self) -> None:
        if not self.open:
            return
        self.open = False
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)  # done or not: nothing of it is wanted any more
        os.waitpid(self.pid, 0)
        os.close(self.source)


def observe(args: argparse.Namespace) -> int:
    """`bare`: `zymi-tui` alone, on the current folder's store or else the sample (with a banner)."""
    target = choose_target(store_arg(args), args.run, project=args.project, bare=args.bare)
    child: _Child | None = None
    if args.own_process:  # before any thread starts (a test calling cli.main shares its process: left alone)
        cap_malloc_arenas()
    if args.own_process and usable_cores() > 1:
        # the newest runs are read by a child, on another core, while the screen's modules load (~2/3 of the time)
        child = _Child(target)
        reading = child.first
    else:  # one core (nothing runs beside the import), or a test calling cli.main: no fork of a process that may
        # run other threads
        opened = asyncio.run(_open(target))
        reading = lambda: opened  # noqa: E731
    # a large store's hash chains: checked from now on by a process of its own (niced: the screen comes first;
    # started after the fork, so that the child holds no end of its pipes)
    check = start_check(target.store) if args.own_process else None
    with modules_loading(args.own_process):
        from zymi_tui.tui.app import DashboardApp

    try:
        first = reading()
        need_terminal("observe")
        app = DashboardApp(target, theme=args.theme, first=first, check=check)
        del first  # held by the screen alone, which lets the runs drawn first go once every run is drawn
        if args.own_process:  # no GC pass while the app starts (~30 young ones: 5-10 ms); on after its first frame
            gc.disable()
        app.run()
    finally:
        if child is not None:
            child.stop()
        if check is not None:
            check.process.stop()  # (done, or not wanted any more)
    return app.return_code or EXIT_OK  # 1 when the app died (the one-line error names the log)
