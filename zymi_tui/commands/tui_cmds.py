"""`zymi-tui observe`: the dashboard (a drop-in for `zymi observe`: -r/--run, -d/--dir, --no-venv)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import pickle
from collections.abc import Callable
from typing import Any

from zymi_tui.cores import usable_cores
from zymi_tui.events.factory import open_reader
from zymi_tui.tui.launch import choose_target
from zymi_tui.tui.source import FirstRuns, first_runs
from zymi_tui.tui.target import Target

from . import modules_loading
from .common import EXIT_OK, add_store_arg, need_terminal, store_arg
from .flags import RUN_HELP, add_run_arg


def configure(command: str, p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    add_run_arg(p, RUN_HELP + ", selected at start")
    p.add_argument("--project", metavar="DIR", help="the project folder the store was recorded with (default: found)")
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
        await reader.close()


def _read_in_child(target: Target) -> Callable[[], FirstRuns | None]:
    """`_open` in a forked child process, on the other core while this one loads the screen's modules (in a
    thread it would share the interpreter lock with the import); returns the function that waits for its
    result, or raises its error (a missing or broken store: its one line)."""
    source, sink = os.pipe()
    child = os.fork()
    if child == 0:  # the child: reads, writes the pickled outcome, and exits without running any exit handler
        try:
            os.close(source)
            outcome: tuple[bool, object]
            try:
                outcome = (True, asyncio.run(_open(target)))
            except BaseException as e:  # its error, raised by the parent
                outcome = (False, e)
            try:
                data = pickle.dumps(outcome)
            except Exception:  # an error that does not pickle: its type and text
                data = pickle.dumps((False, RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]}")))
            with os.fdopen(sink, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(sink)

    def result() -> FirstRuns | None:
        with os.fdopen(source, "rb") as got:
            data = got.read()
        os.waitpid(child, 0)
        outcome: tuple[bool, Any] = pickle.loads(data) if data else (False, RuntimeError("the store reader died"))
        ok, value = outcome
        if not ok:
            raise value
        first: FirstRuns | None = value
        return first

    return result


def observe(args: argparse.Namespace) -> int:
    """`bare`: `zymi-tui` alone, on the current folder's store or else the sample (with a banner)."""
    target = choose_target(store_arg(args), args.run, project=args.project, bare=args.bare)
    if args.own_process and usable_cores() > 1:
        # the newest runs are read by a child, on another core, while the screen's modules load (~2/3 of the time)
        reading = _read_in_child(target)
    else:  # one core (nothing runs beside the import), or a test calling cli.main: no fork of a process that may
        # run other threads
        first = asyncio.run(_open(target))
        reading = lambda: first  # noqa: E731
    with modules_loading(args.own_process):
        from zymi_tui.tui.app import DashboardApp

    first = reading()
    need_terminal("observe")
    app = DashboardApp(target, theme=args.theme, first=first)
    if args.own_process:  # no GC pass while the app starts (~30 young ones: 5-10 ms); on again after its first frame
        gc.disable()
    app.run()
    return app.return_code or EXIT_OK  # 1 when the app died (the one-line error names the log)
