"""The `zymi-tui` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from zymi_tui import __version__
from zymi_tui.commands import context_cmds, store_cmds, tuning_cmds

COMMAND_MODULES = [store_cmds, context_cmds, tuning_cmds]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zymi-tui",
        description="Observe and tune the context windows of LLM agents, on zymi-core 0.9.3 event stores.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"zymi-tui {__version__}")
    parser.add_argument("--no-venv", action="store_true", help="accepted for compatibility with zymi; ignored")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # zymi accepts --no-venv anywhere on the line
    args_list = [a for a in args_list if a != "--no-venv"]
    parser = build_parser()
    args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0
    code: int = func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
