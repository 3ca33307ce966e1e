"""What every subcommand shares: output consoles, exit codes, the STORE argument, asyncio.

Errors are not handled here: a command raises a `UserError` (or lets one pass through) and
`zymi_tui.cli.main` prints its one line and exits with its code.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from rich.console import Console
from rich.markup import escape

from zymi_tui.errors import UserError
from zymi_tui.project.locate import Located, locate

T = TypeVar("T")

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class CommandError(UserError):
    """A failure of a command's own arguments or flow: one line on stderr, exit code `code`."""

    title = "Command"

    def __init__(self, message: str, code: int = EXIT_USAGE, *, hint: str | None = None) -> None:
        super().__init__(message, hint, exit_code=code)


def fail(message: str) -> None:
    err.print(f"[bold red]zymi-tui: error:[/] {escape(message)}", markup=True, highlight=False)


def warn(message: str) -> None:
    err.print(f"[yellow]zymi-tui: warning:[/] {escape(message)}", markup=True, highlight=False)


def run_async(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


def add_store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "store",
        nargs="?",
        metavar="STORE",
        help="a .db file, a project folder (its .zymi/events.db or project.yml `store:`), "
        "or a postgres:// URL; default: the current folder",
    )
    p.add_argument("-d", "--dir", dest="dir", metavar="DIR", help="project folder (zymi's flag; same as STORE)")


def store_arg(args: argparse.Namespace) -> str | None:
    value: str | None = args.store or getattr(args, "dir", None)
    return value


def located(args: argparse.Namespace) -> Located:
    """The store a command reads (STORE / -d DIR / the current folder) and the project describing it."""
    return locate(store_arg(args), project=getattr(args, "project", None))
