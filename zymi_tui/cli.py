"""The `zymi-tui` command. Subcommands live in `zymi_tui/commands/*_cmds.py`, each with `register()`."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

from zymi_tui import __version__, commands
from zymi_tui.commands.common import EXIT_INTERRUPTED, EXIT_OK, err, fail
from zymi_tui.errors import UserError


def command_modules() -> list[ModuleType]:
    """Every `zymi_tui.commands.*_cmds` module, in the order its `ORDER` asks (default 50)."""
    found = [
        importlib.import_module(f"{commands.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if info.name.endswith("_cmds")
    ]
    return sorted(found, key=lambda m: (getattr(m, "ORDER", 50), m.__name__))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zymi-tui",
        description="Observe and tune the context windows of LLM agents, on zymi-core 0.9.3 event stores.\n"
        "Run `zymi-tui` alone to open the dashboard on the current folder's store (or the bundled sample).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"zymi-tui {__version__}")
    parser.add_argument("--no-venv", action="store_true", help="accepted for compatibility with zymi; ignored")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in command_modules():
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # zymi accepts --no-venv anywhere on the line
    args_list = [a for a in args_list if a != "--no-venv"]
    parser = build_parser()
    args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    try:
        if func is None:
            from zymi_tui.commands import tui_cmds

            return tui_cmds.observe_bare()  # bare `zymi-tui` opens the dashboard
        code: int = func(args)
        return code
    except UserError as e:  # the one place a user-facing error becomes a line on stderr and an exit code
        fail(e.one_line())
        return e.exit_code
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        err.print("interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
