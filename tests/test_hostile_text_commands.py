"""Every command that reads a store, on stores whose every text (tool names, stream ids, results, answers)
carries Rich markup or terminal escapes (hostile_stores' MARKUP and ESCAPES): each ends normally, with no
traceback, and prints store text as text, never obeyed. `rent` on the markup store raised Rich's
MarkupError from a tool name in a table cell until a session's oracle run found it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.hostile_stores import make_store_sync
from tests.test_skipped_rows_named import COMMANDS
from tests.waiting import LIMIT

from .conftest import zymi_tui_bin

# output a program reads (zymi's JSON lines, our --json): the store's text as JSON escapes it, byte for byte
MACHINE_FORMS = ("--raw", "--json", "otel", "lhar")
# a terminal control that would act, not show: ESC, a C1 CSI, a BEL
CONTROL = re.compile("[\x1b\x9b\x07]")


@pytest.fixture(scope="module", params=["markup", "escapes"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path, str]:
    name = str(request.param)
    db, project = make_store_sync(name, tmp_path_factory.mktemp(name) / "store")
    assert project is not None
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        (step,) = c.execute("SELECT MIN(stream_id) FROM events WHERE stream_id LIKE '%:step:%'").fetchone()
    return name, db, project, str(step)


# and the forms only a person reads that the skipped-rows list leaves out
READ_FORMS = {
    **COMMANDS,
    "advise --format md": lambda db, p, s: ["advise", str(db), "--project", str(p), "--format", "md"],
    "replay --messages": lambda db, p, s: ["replay", str(db), "--project", str(p), "--messages"],
}


@pytest.mark.parametrize("command", sorted(READ_FORMS))
def test_a_command_prints_hostile_text_as_text(command: str, store: tuple[str, Path, Path, str]) -> None:
    name, db, project, step = store
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    line = [zymi_tui_bin(), *READ_FORMS[command](db, project, step)]
    done = subprocess.run(line, capture_output=True, text=True, timeout=LIMIT, env=env)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() or command.startswith("export"), done.stderr
    if name == "escapes" and not any(form in command for form in MACHINE_FORMS):
        assert not CONTROL.search(done.stdout), f"a control character reached the terminal: {done.stdout!r}"
