"""`zymi-tui observe`: the dashboard (a drop-in for `zymi observe`: -r/--run, -d/--dir, --no-venv)."""

from __future__ import annotations

import argparse
import sys

from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation

from .common import EXIT_OK, CommandError, add_store_arg, run_async, store_arg

ORDER = 10  # position in `zymi-tui --help`


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("observe", help="the live dashboard: runs, events, context size, call inspector")
    add_store_arg(p)
    p.add_argument("-r", "--run", metavar="STREAM", help="select this run's stream id at start")
    p.add_argument("--project", metavar="DIR", help="the project folder the store was recorded with (default: found)")
    p.add_argument("--theme", metavar="NAME", help="a Textual theme, e.g. textual-dark or textual-light")
    p.set_defaults(func=observe)


async def _check(store: StoreLocation) -> None:
    """Open and count before the screen starts, so a missing or broken store is one clear line."""
    reader = await open_reader(store)
    try:
        await reader.count()
    finally:
        await reader.close()


def observe(args: argparse.Namespace) -> int:
    return open_dashboard(store_arg(args), run=args.run, project=args.project, theme=args.theme)


def observe_bare() -> int:
    """`zymi-tui` with no command: the dashboard on the current folder's store, or the sample."""
    return open_dashboard(None, bare=True)


def open_dashboard(
    store: str | None,
    *,
    run: str | None = None,
    project: str | None = None,
    theme: str | None = None,
    bare: bool = False,
) -> int:
    from zymi_tui.tui.app import DashboardApp
    from zymi_tui.tui.launch import choose_target

    target = choose_target(store, run, project=project, bare=bare)
    run_async(_check(target.store))
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        raise CommandError("observe needs a terminal (stdin and stdout must be a TTY)")
    DashboardApp(target, theme=theme).run()
    return EXIT_OK
