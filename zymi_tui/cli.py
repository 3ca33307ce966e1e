"""The `zymi-tui` command. The command table is `zymi_tui.commands.COMMANDS`; a command's module
(`zymi_tui/commands/*_cmds.py`, with `configure(command, parser)`) is imported only when it runs."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import gc
import importlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from zymi_tui import EXIT_INTERRUPTED, INTERRUPTED_LINE, SIGINT_IGNORED_AT_START, __version__
from zymi_tui.commands import COMMAND_BY_NAME, COMMANDS, modules_loading
from zymi_tui.errors import EXIT_USAGE, UserError


def command_module(name: str) -> Callable[[str, argparse.ArgumentParser], None]:
    """The `configure` function of the module serving command `name`, imported now."""
    module = importlib.import_module(f"zymi_tui.commands.{COMMAND_BY_NAME[name].module}")
    configure: Callable[[str, argparse.ArgumentParser], None] = module.configure
    return configure


def chosen_command(args: Sequence[str]) -> str | None:
    """The command named on the line: its first word that is not an option."""
    for arg in args:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMAND_BY_NAME else None
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command is listed (for `--help` and the choices an unknown command is told); with `command`
    named, only its parser is made, and only its module is imported, to add its arguments."""
    parser = argparse.ArgumentParser(
        prog="zymi-tui",
        description="Observe and tune the context windows of LLM agents, on zymi-core 0.9.3 event stores.\n"
        "Run `zymi-tui` alone to open the dashboard on the current folder's store (or the bundled sample).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"zymi-tui {__version__}")
    parser.add_argument("--no-venv", action="store_true", help="accepted for compatibility with zymi; ignored")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for spec in COMMANDS if command is None else (COMMAND_BY_NAME[command],):
        p = sub.add_parser(spec.name, help=spec.help)
        if spec.name == command:
            command_module(spec.name)(spec.name, p)
            parser.set_defaults(command_parser=p)
    return parser


def parse_line(parser: argparse.ArgumentParser, args_list: list[str]) -> argparse.Namespace:
    """The line parsed; words no argument takes are refused by the command's own parser (its usage, not
    the top-level one: argparse leaves them to the top-level parser)."""
    args, extras = parser.parse_known_args(args_list)
    if extras:
        own: argparse.ArgumentParser = getattr(args, "command_parser", None) or parser
        own.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


# commands whose process ends as soon as they return: no interpreter teardown after them (exit_now);
# an export closes its store, its output and its partner processes before it returns
EXIT_AT_ONCE = frozenset({"run", "export"})
# a write that can never succeed where it is going: the disk or the quota is full, the file over its size limit
OUTPUT_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def exit_now(code: int) -> NoReturn:
    """End the process with `code` once its output is flushed, skipping the interpreter's teardown
    (freeing every module and object one by one: 10-20 ms after a `run`). Only for a command whose work
    is all done and awaited when it returns (its store closed, its threads idle)."""
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said on it
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    own_process = argv is None  # the process's own command line: the process ends after it
    # zymi accepts --no-venv anywhere on the line
    args_list = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--no-venv"]
    command = chosen_command(args_list)
    code = run_command(args_list, command, own_process=own_process)
    if own_process:  # the command is over: a Ctrl-C now ends nothing more than the exit already does
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if own_process and command in EXIT_AT_ONCE:
        exit_now(code)
    return code


def run_command(args_list: list[str], command: str | None, *, own_process: bool) -> int:
    if own_process:
        # what is left is freed by the exit itself, not traced by the interpreter's last GC pass (~70 ms)
        atexit.register(gc.freeze)
    with modules_loading(own_process=own_process):
        args = parse_line(build_parser(command), args_list)
    try:
        if own_process and not SIGINT_IGNORED_AT_START:
            # start-up is over (zymi_tui/__init__.py): Ctrl-C is KeyboardInterrupt, handled below
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if command is None:
            args = build_parser("observe").parse_args(["observe"])
            args.bare = True  # bare `zymi-tui` opens the dashboard on the current folder or the sample
        args.own_process = own_process  # a command loading more modules as it runs (modules_loading)
        code: int = args.func(args)
        return code
    except UserError as e:  # the one place a user-facing error becomes a line on stderr and an exit code
        from zymi_tui.commands.common import fail

        fail(e.one_line())
        return e.exit_code
    except BrokenPipeError:  # the one place a closed pipe (`| head -1`) becomes a normal end: exit 0, no message
        from zymi_tui.commands.common import drop_stdout

        drop_stdout()
        return 0
    except OSError as e:  # the one place a full disk or a file-size limit becomes one line, not a traceback
        if e.errno not in OUTPUT_FULL:
            raise
        from zymi_tui.commands.common import drop_stdout, fail

        drop_stdout()  # what stdout still holds cannot be written either: not a second error at the exit
        fail(f"cannot write the output: {e.strerror or e}; what was written is incomplete")
        return EXIT_USAGE
    except KeyboardInterrupt:
        if own_process:  # one line, whatever a second Ctrl-C does
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.stderr.write(INTERRUPTED_LINE.decode())
        sys.stderr.flush()
        return EXIT_INTERRUPTED
    finally:
        if own_process:  # no store connection's thread holds the exit (imported only if a store was opened)
            opened = sys.modules.get("zymi_tui.events.sqlite_connect")
            if opened is not None:
                opened.stop_left_connections()


if __name__ == "__main__":
    sys.exit(main())
