"""The modules a `zymi-tui` command line loads: run in a fresh interpreter, its `sys.modules` written to a file
at the end (whatever the command's exit), for the tests that keep a command's start-up lean."""

from __future__ import annotations

import json
from pathlib import Path

# python -c RUN MODULES_FILE ARGS...: `zymi-tui ARGS...`, then the module names into MODULES_FILE
RUN = """
import json, sys
modules_file = sys.argv[1]
sys.argv = ["zymi-tui", *sys.argv[2:]]
import zymi_tui.cli as cli
def dump():
    with open(modules_file, "w") as f:
        json.dump(sorted(sys.modules), f)
def exit_now(code, ends=cli.exit_now):  # (a command that ends its process at once: `cli.EXIT_AT_ONCE`)
    dump()
    ends(code)
cli.exit_now = exit_now
try:
    code = cli.main()
finally:
    dump()
raise SystemExit(code)
"""


def loaded(modules_file: Path, names: tuple[str, ...]) -> list[str]:
    """The modules written to `modules_file` that are one of `names` or a submodule of one."""
    return [m for m in json.loads(modules_file.read_text()) if any(m == n or m.startswith(f"{n}.") for n in names)]
