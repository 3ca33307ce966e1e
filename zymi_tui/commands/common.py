"""What every subcommand shares: output consoles, exit codes, the STORE argument, asyncio.

Errors are not handled here: a command raises a `UserError` (or lets one pass through) and
`zymi_tui.cli.main` prints its one line and exits with its code.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from zymi_tui import EXIT_INTERRUPTED as EXIT_INTERRUPTED  # re-exported: the commands take it from here
from zymi_tui.errors import UserError
from zymi_tui.events.location import SqliteStore, StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.project.locate import Located, locate
from zymi_tui.text_safety import escape_controls

T = TypeVar("T")

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

if TYPE_CHECKING:
    import logging

    from rich.console import Console


@functools.cache
def _console(stderr: bool) -> Console:
    from rich.console import Console  # 25 ms: not loaded by a command that prints no rich text (`run`)

    class PipedConsole(Console):
        """A closed pipe (`| head -1`) is raised as the BrokenPipeError it is (rich exits with 1 on its
        own); `zymi_tui.cli` ends the command there with exit code 0."""

        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    return PipedConsole(stderr=stderr, highlight=False, soft_wrap=True)


def drop_stdout() -> None:
    """The reader of our output went away (`zymi-tui events STORE | head -1`): stdout is pointed at
    /dev/null, so what is still buffered, and what is printed after, goes nowhere instead of failing
    again (Python's documented recipe for a closed pipe)."""
    import os

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def need_terminal(command: str) -> None:
    """A full-screen command refuses a pipe or a file (`zymi-tui observe | head`): one line, not escape codes."""
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        raise CommandError(f"{command} needs a terminal (stdin and stdout must be a TTY)")


def __getattr__(name: str) -> Console:
    """`out` and `err`, the rich consoles on stdout and stderr, made at their first use."""
    if name in ("out", "err"):
        return _console(name == "err")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class CommandError(UserError):
    """A failure of a command's own arguments or flow: one line on stderr, exit code `code`."""

    title = "Command"

    def __init__(self, message: str, code: int = EXIT_USAGE, *, hint: str | None = None) -> None:
        super().__init__(message, hint, exit_code=code)


def shown(text: str) -> str:
    """Store text for a rich markup string: terminal controls escaped visibly, then markup escaped."""
    from rich.markup import escape

    return escape(escape_controls(text))


def print_markup(markup: str) -> None:
    """`out.print(markup)`, and the same bytes: into a pipe or a file (no terminal, no colour) the markup's
    plain text is written as rich renders it (`rich.markup.render`: its escapes, emoji codes and control
    codes dropped) and its layout skipped, which there changes nothing (soft wrap: no line is wrapped,
    cropped or padded; a tab, which it would expand, goes the long way). Half of rich's cost: 0.53 ->
    0.27 s of CPU for advise's 1.8 MB report of many_99k."""
    console = _console(False)
    if console.is_terminal or console.color_system is not None or console.record or console.quiet:
        console.print(markup)
        return
    from rich.markup import render

    plain = render(markup).plain
    if "\t" in plain:
        console.print(markup)
        return
    try:
        console.file.write(plain + "\n")
        console.file.flush()
    except BrokenPipeError:
        console.on_broken_pipe()


@functools.cache
def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def raw_line(text: str) -> str:
    """`--raw`/`--json` lines: byte-exact into a pipe or file, controls escaped (line breaks kept)
    when they go to a terminal."""
    return escape_controls(text, keep="\n") if _stdout_is_terminal() else text


PROGRESS_FROM = 20_000  # events: a store this large shows its progress (when stderr is a terminal)


class Progress:
    """`what: event N/TOTAL (P%)` rewritten in place on stderr, for a long output going to a pipe or file
    while stderr is a terminal (on a terminal the output itself shows how far it is)."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total = what, total
        self.shown = total >= PROGRESS_FROM and sys.stderr.isatty() and not _stdout_is_terminal()

    def at(self, done: int) -> None:
        if self.shown:
            sys.stderr.write(f"\r{self.what}: event {done}/{self.total} ({100 * done // max(self.total, 1)}%)")
            sys.stderr.flush()

    def end(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def fail(message: str) -> None:
    _console(True).print(f"[bold red]zymi-tui: error:[/] {shown(message)}", markup=True, highlight=False)


def warn(message: str) -> None:
    _console(True).print(f"[yellow]zymi-tui: warning:[/] {shown(message)}", markup=True, highlight=False)


MAX_SKIPPED_LINES = 3  # more skipped rows than this are summarised on one line
MAX_LISTED_IDS = 20


def report_skipped(reader: EventReader) -> None:
    """Name on stderr every row the reader skipped since the last report (one line when many)."""
    bad = list({b.global_id: b for b in reader.problems}.values())  # a row read twice (two replays) once
    reader.problems.clear()
    hint = "`zymi-tui verify` tells whether a row was changed after it was written"
    if len(bad) <= MAX_SKIPPED_LINES:
        for row in bad:
            warn(f"{reader.label}: skipped unreadable {row.describe()}; the rest is read. {hint}")
        return
    ids = ", ".join(str(b.global_id) for b in bad[:MAX_LISTED_IDS])
    more = f" and {len(bad) - MAX_LISTED_IDS} more" if len(bad) > MAX_LISTED_IDS else ""
    warn(
        f"{reader.label}: skipped {len(bad)} unreadable rows (ids {ids}{more}); the rest is read. "
        f"First: {bad[0].describe()}. {hint}"
    )


async def close_reader(reader: EventReader) -> None:
    """Close a command's reader, first naming on stderr every row it skipped (whatever the command
    did with the rest: listed, replayed, counted, exported)."""
    try:
        report_skipped(reader)
    finally:
        await reader.close()


def _sigint(how: int) -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(how, {signal.SIGINT})


def _known_child(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Unknown child process pid")


def quiet_child_watcher() -> None:
    """Drop asyncio's "Unknown child process pid N, will report returncode 255" warning. Commands
    that run the engine keep a shell subprocess per run; a Ctrl-C that lands while one of its
    processes exits can let the subprocess module reap it before asyncio's child-watcher thread,
    which then prints that line although nothing went wrong (the shell is closed and the run
    sealed). The shell sessions reap their processes themselves on cancellation; this is the guard
    for the interleavings left to asyncio."""
    import logging  # here, not at the top: a `run` appends its first event before it loads logging

    asyncio_logger = logging.getLogger("asyncio")
    if _known_child not in asyncio_logger.filters:
        asyncio_logger.addFilter(_known_child)


def hold_ctrl_c() -> None:
    """Hold Ctrl-C back (a press waits) until `let_ctrl_c_through` or the end of `run_async`."""
    _sigint(signal.SIG_BLOCK)


def let_ctrl_c_through() -> None:
    """Let Ctrl-C through again: one pressed meanwhile arrives now."""
    _sigint(signal.SIG_UNBLOCK)


def run_reading(location: StoreLocation, work: Callable[[bool], Coroutine[Any, Any, T]]) -> T:
    """`work(inline)` run to its end: on a SQLite store, reading in this thread with no event loop
    (`inline`, `events/sqlite_inline.py`: asyncio is not even loaded); on another store, on an event loop."""
    if isinstance(location, SqliteStore):
        from zymi_tui.events.sqlite_inline import run_inline

        return run_inline(work(True))
    return run_async(work(False))


def run_async(coro: Awaitable[T], *, held: bool = False) -> T:
    """`asyncio.run`, with Ctrl-C held back while the event loop is set up and torn down: it cancels
    `coro` while that runs (asyncio then raises KeyboardInterrupt), or arrives as KeyboardInterrupt
    once the loop is closed; never inside the loop's own setup or teardown, which prints tracebacks.
    `held`: Ctrl-C stays held back when `coro` starts, until it calls `let_ctrl_c_through`."""
    import asyncio  # here, not at the top: a `run` appends its first event before it loads asyncio

    result: list[T] = []

    async def main() -> None:
        if not held:
            _sigint(signal.SIG_UNBLOCK)
        try:
            result.append(await coro)
        finally:
            _sigint(signal.SIG_BLOCK)

    _sigint(signal.SIG_BLOCK)
    try:
        # the result is kept out of the loop's main task: Python 3.11's asyncio.run formats that task
        # (result included, every object of it) in an error message it builds and drops when it puts
        # back the Ctrl-C handler: seconds for a sweep's per-call figures
        asyncio.run(main())
        return result[0]
    finally:
        _sigint(signal.SIG_UNBLOCK)  # a Ctrl-C held back is raised here


DIR_HELP = "the project folder (zymi's -d; default: the current folder)"


def add_store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "store",
        nargs="?",
        metavar="STORE",
        help="a .db file, a project folder (its .zymi/events.db or project.yml `store:`), "
        "or a postgres:// URL; default: the current folder",
    )
    p.add_argument("-d", "--dir", dest="dir", metavar="DIR", help=DIR_HELP + "; its store, as STORE would name it")


def add_project_arg(p: argparse.ArgumentParser, used_for: str) -> None:
    """`--project DIR`: the project describing the store (`located`), else the one found from the store."""
    p.add_argument(
        "--project", metavar="DIR", help=f"the project folder the store was recorded with ({used_for}; default: found)"
    )


def store_arg(args: argparse.Namespace) -> str | None:
    value: str | None = args.store or getattr(args, "dir", None)
    return value


def located(args: argparse.Namespace) -> Located:
    """The store a command reads (STORE / -d DIR / the current folder) and the project describing it."""
    return locate(store_arg(args), project=getattr(args, "project", None))
