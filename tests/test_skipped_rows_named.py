"""Nothing hidden: every command that reads a store names each row it could not read, on stderr, and
`runs` still lists a run whose first row (its PipelineRequested) is unreadable, marked as such.

The store is hostile_stores' UNREADABLE: a run written by our writer (the oracle's compaction run), its
first row and its first ToolCallCompleted cut short with plain sqlite3. Each command runs as a
subprocess; `verify` is the one that must fail (the two rows no longer match their hashes) and say
where.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile_stores import UNREADABLE, make_store_sync, unreadable_row_ids
from tests.waiting import LIMIT

from .conftest import zymi_tui_bin


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, list[int]]:
    """(events.db, project, the step stream of the unreadable tool row, the unreadable row ids)."""
    db, project = make_store_sync(UNREADABLE, tmp_path_factory.mktemp("unreadable") / "store")
    assert project is not None
    bad = unreadable_row_ids(db)
    con = sqlite3.connect(db)
    step = con.execute("SELECT stream_id FROM events WHERE id = ?", (bad[1],)).fetchone()[0]
    con.close()
    assert ":step:" in step
    return db, project, step, bad


Args = Callable[[Path, Path, str], list[str]]
# command line -> what it reads: every reading command, with the flags that change what it reads
COMMANDS: dict[str, Args] = {
    "events": lambda db, p, s: ["events", str(db), "--all"],
    "events --raw": lambda db, p, s: ["events", str(db), "--all", "--raw"],
    "runs": lambda db, p, s: ["runs", str(db)],
    "runs --raw": lambda db, p, s: ["runs", str(db), "--raw"],
    "runs --turns": lambda db, p, s: ["runs", str(db), "--turns"],
    "replay": lambda db, p, s: ["replay", str(db), "--project", str(p)],
    "context": lambda db, p, s: ["context", str(db), "--project", str(p), "--step-stream", s, "--seq", "5"],
    "compare": lambda db, p, s: ["compare", str(db), "--project", str(p), "--profiles", "recorded,chat"],
    "sweep": lambda db, p, s: ["sweep", str(db), "--project", str(p), "--workers", "1", "--window", "2"],
    "rent": lambda db, p, s: ["rent", str(db), "--project", str(p), "--step-stream", s],
    "find": lambda db, p, s: ["find", "workspace", str(db), "--project", str(p), "--step-stream", s],
    "advise": lambda db, p, s: ["advise", str(db), "--project", str(p)],
    "advise --json": lambda db, p, s: ["advise", str(db), "--project", str(p), "--json"],
    "export lhar": lambda db, p, s: ["export", str(db), "--project", str(p), "--format", "lhar"],
    "export otel": lambda db, p, s: ["export", str(db), "--project", str(p), "--format", "otel"],
}


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    return subprocess.run([zymi_tui_bin(), *args], capture_output=True, text=True, timeout=LIMIT, env=env)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_names_each_unreadable_row_it_skipped(
    command: str, store: tuple[Path, Path, str, list[int]]
) -> None:
    db, project, step, bad = store
    done = _run(COMMANDS[command](db, project, step))
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 0, done.stderr
    # `runs` reads the bookkeeping kinds only: of the two, the request row
    expected = bad[:1] if command.startswith("runs") else bad
    for row in expected:
        assert f"row {row} " in done.stderr, f"row {row} is not named on stderr: {done.stderr!r}"
    assert done.stderr.count(f"row {bad[0]} ") <= 1, "a row is named once, however often it was read"


@pytest.mark.parametrize("form", ["table", "raw", "turns"])
def test_a_run_whose_request_row_is_unreadable_is_listed_and_marked(
    form: str, store: tuple[Path, Path, str, list[int]]
) -> None:
    db, _, step, bad = store
    run = step.split(":")[0]
    done = _run(["runs", str(db), *({"raw": ["--raw"], "turns": ["--turns"]}.get(form, []))])
    assert done.returncode == 0, done.stderr
    assert "No runs recorded yet" not in done.stdout
    if form == "raw":
        (line,) = done.stdout.splitlines()
        obj = json.loads(line)
        # pipeline and status from its PipelineCompleted, which reads
        assert obj["stream_id"] == run and obj["unreadable_request_row"] == bad[0], obj
        assert obj["pipeline"] == "main" and obj["status"] == "ok", obj
        return
    _header, row = done.stdout.splitlines()
    assert row.split()[:2] == ["ok", run], row
    assert f"its request (row {bad[0]}) is unreadable" in row, row


def test_verify_names_where_each_chain_breaks(store: tuple[Path, Path, str, list[int]]) -> None:
    db, _, step, _ = store
    done = _run(["verify", str(db)])
    assert done.returncode == 1, done.stderr
    assert f"{step.split(':')[0]}: BROKEN at sequence 1" in done.stdout, done.stdout
    assert f"{step}: BROKEN at sequence 4" in done.stdout, done.stdout


async def test_the_dashboard_lists_the_run_and_counts_its_unreadable_rows(
    store: tuple[Path, Path, str, list[int]],
) -> None:
    from tests.tui_support import make_app, settle

    db, _, step, bad = store
    app = make_app(db)
    async with app.run_test(size=(120, 30)) as pilot:
        main = await settle(app, pilot)
        assert [(s.stream_id, s.unreadable_request) for s in main.runs.summaries] == [(step.split(":")[0], bad[0])]
        assert bad[0] in main.bad_rows  # the banner's "unreadable row(s) skipped"
        await pilot.press("q")
