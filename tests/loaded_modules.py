"""The modules a `zymi-tui` command line loads: run in a fresh interpreter, its `sys.modules` written to a file
at the end (whatever the command's exit), for the tests that keep a command's start-up lean."""

from __future__ import annotations

import json
from pathlib import Path


def probe(start: str, names: str = "sys.modules") -> str:
    """A script that runs `start` (it sets `modules_file` and `sys.argv`), then `zymi-tui`'s main, and writes
    the module names `names` (an expression over `sys.modules`) as JSON into `modules_file` when the command
    is over: as it returns, raises, or ends its process at once (`cli.EXIT_AT_ONCE`, `cli.exit_now`)."""
    return f"""
import json, sys
{start}
import zymi_tui.cli as cli
def dump():
    with open(modules_file, "w") as f:
        json.dump(sorted({names}), f)
def exit_now(code, ends=cli.exit_now):
    dump()
    ends(code)
cli.exit_now = exit_now
try:
    code = cli.main()
finally:
    dump()
raise SystemExit(code)
"""


# python -c RUN MODULES_FILE ARGS...: `zymi-tui ARGS...`, then the module names into MODULES_FILE
RUN = probe('modules_file = sys.argv[1]\nsys.argv = ["zymi-tui", *sys.argv[2:]]')


def loaded(modules_file: Path, names: tuple[str, ...]) -> list[str]:
    """The modules written to `modules_file` that are one of `names` or a submodule of one."""
    return [m for m in json.loads(modules_file.read_text()) if any(m == n or m.startswith(f"{n}.") for n in names)]
