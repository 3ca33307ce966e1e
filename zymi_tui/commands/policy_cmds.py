"""`zymi-tui policy check`: the verdict a project's policy gives a shell command or a file path, from the
very gate the engine runs every tool call through (engine/runtime.py `project_contracts`)."""

from __future__ import annotations

import argparse
import json

from zymi_tui.commands.common import DIR_HELP, EXIT_FAIL, EXIT_OK, CommandError, out, shown
from zymi_tui.commands.workspace import load_project
from zymi_tui.engine.policy import Verdict

WORDS = {"approved": "approve", "requires_approval": "ask", "denied": "deny"}


def _row(key: str, subject: str, verdict: Verdict) -> dict[str, str]:
    reason = verdict.why or verdict.reason
    return {key: subject, "verdict": WORDS[verdict.kind], "reason": reason}


def cmd_check(args: argparse.Namespace) -> int:
    from zymi_tui.engine.runtime import project_contracts

    inner = argparse.ArgumentParser(prog="zymi-tui policy check")
    _describe(inner)
    inner.add_argument("commands", nargs="*", metavar="COMMAND", help="a shell command line, as the agent would run it")
    _options(inner)
    more = inner.parse_intermixed_args(args.rest)  # options and commands in any order
    commands = list(more.commands)
    reads, writes = [*(args.read or []), *(more.read or [])], [*(args.write or []), *(more.write or [])]
    as_json = args.json or more.json
    if not (commands or reads or writes):
        raise CommandError("nothing to check: give a COMMAND, --read PATH or --write PATH")
    contracts = project_contracts(load_project(more.dir or args.dir))
    rows = [_row("command", c, contracts.shell_command(c)) for c in commands]
    rows += [_row("read", p, contracts.read_file(p)) for p in reads]
    rows += [_row("write", p, contracts.write_file(p)) for p in writes]
    for row in rows:
        if as_json:
            print(json.dumps(row, ensure_ascii=False), flush=True)
            continue
        key = next(iter(row))
        subject = row[key] if key == "command" else f"{key} {row[key]}"
        colour = {"approve": "green", "ask": "yellow", "deny": "red"}[row["verdict"]]
        reason = f"  [dim]{shown(row['reason'])}[/]" if row["reason"] else ""
        out.print(f"[{colour}]{row['verdict']:<7}[/] {shown(subject)}{reason}")
    return EXIT_OK if all(r["verdict"] == "approve" for r in rows) else EXIT_FAIL


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-d", "--dir", metavar="DIR", help=DIR_HELP)
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--read", action="append", metavar="PATH", help="check read_file of PATH (repeatable)")
    p.add_argument("--write", action="append", metavar="PATH", help="check write_file of PATH (repeatable)")


def configure(command: str, p: argparse.ArgumentParser) -> None:
    _describe(p)
    p.add_argument("action", choices=["check"], metavar="check", help="check commands and paths (the one action)")
    p.add_argument(
        "rest",
        nargs=argparse.REMAINDER,
        metavar="COMMAND",
        help="a shell command line, as the agent would run it (quoted; several may follow)",
    )
    _options(p)
    p.set_defaults(func=cmd_check)


def _describe(p: argparse.ArgumentParser) -> None:
    p.usage = "zymi-tui policy check [-h] [-d DIR] [--json]\n       [--read PATH] [--write PATH] [COMMAND ...]"
    p.description = (
        "The verdict the project's policy gives each COMMAND (one shell command line\n"
        "per argument: quote it), and the file tools' verdict on reading or writing a\n"
        "PATH: approve, ask (a human must approve) or deny. Judged by the very gate a\n"
        "run uses: globs, ~ and $HOME expanded against the real files, paths resolved\n"
        "through symbolic links from the project root, recursive readers (grep -r,\n"
        "find, tar...) judged on every file under them."
    )
    p.epilog = (
        "examples:\n"
        "  zymi-tui policy check 'cat .env' 'ls .' 'echo hi > output/new.txt'\n"
        "  zymi-tui policy check --read output/link --write project.yml\n"
        "  zymi-tui policy check --json 'grep -r TODO .'\n"
        '    {"command": "grep -r TODO .", "verdict": "approve", "reason": ""}\n\n'
        "--json prints one object per line:\n"
        '  {"command"|"read"|"write": ..., "verdict": "approve"|"ask"|"deny",\n'
        '   "reason": ...}\n'
        "exit status: 0 every verdict is approve, 1 one asks or denies, 2 the project\n"
        "cannot be loaded"
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter
