"""`zymi-tui observe`: the dashboard (a drop-in for `zymi observe`: -r/--run, -d/--dir, --no-venv)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor

from zymi_tui.events.factory import open_reader
from zymi_tui.tui.launch import choose_target
from zymi_tui.tui.source import FirstRuns, first_runs
from zymi_tui.tui.target import Target

from . import modules_loading
from .common import EXIT_OK, CommandError, add_store_arg, store_arg
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


def observe(args: argparse.Namespace) -> int:
    """`bare`: `zymi-tui` alone, on the current folder's store or else the sample (with a banner)."""
    target = choose_target(store_arg(args), args.run, project=args.project, bare=args.bare)
    with ThreadPoolExecutor(max_workers=1) as pool:
        # the newest runs are read while the screen's modules load (Textual, the widgets, plotext: ~2/3 of
        # the time to the first frame); SQLite's own work runs beside the import, outside the GIL
        reading = pool.submit(asyncio.run, _open(target))
        with modules_loading(args.own_process):
            from zymi_tui.tui.app import DashboardApp

        first = reading.result()  # a missing or broken store: its one line (StoreError)
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        raise CommandError("observe needs a terminal (stdin and stdout must be a TTY)")
    app = DashboardApp(target, theme=args.theme, first=first)
    app.run()
    return app.return_code or EXIT_OK  # 1 when the app died (the one-line error names the log)
