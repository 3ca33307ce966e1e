"""`replay` reads a SQLite store in its own thread with no event loop (`events/sqlite_inline.py`): asyncio,
aiosqlite and ssl are never imported. The oracle is the event loop's path (aiosqlite's thread, pages read
ahead), forced in the same subprocess form: stdout, stderr and the exit code must be the same, byte for
byte, on hostile stores (hostile text, unknown kinds, a broken chain, unreadable rows, columns of the wrong
type, text that is not UTF-8, an empty store), on every recorded store, whole and by run."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile_stores import HOSTILE, UNREADABLE, make_store_sync
from tests.loaded_modules import probe
from zymi_tui.events import sqlite_read
from zymi_tui.events.sqlite_inline import AwaitedLoop, run_inline
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import StoreLocked

ORACLE = Path(__file__).parent / "oracle"
ROOT = Path(__file__).parent.parent
LOOP_MODULES = ("asyncio", "aiosqlite", "ssl")

# argv: MODE (inline: as the command runs; loop: SQLite locations not recognised, so the event loop's path)
# MODULES_FILE then the command line; the modules loaded are written to MODULES_FILE after the command
# (before the process ends, for a command that ends it at once)
RUN = probe(
    """mode, modules_file = sys.argv[1], sys.argv[2]
sys.argv = ["zymi-tui", *sys.argv[3:]]
if mode == "loop":
    import zymi_tui.commands.common as cmds
    cmds.SqliteStore = type("NotASqliteStore", (), {})""",
    f"m for m in sys.modules if m.split('.')[0] in {LOOP_MODULES!r}",
)


def _replay(mode: str, tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[bytes], list[str]]:
    return _command(mode, tmp, "replay", *args)


def _command(mode: str, tmp: Path, *argv: str) -> tuple[subprocess.CompletedProcess[bytes], list[str]]:
    modules = tmp / f"modules-{mode}.json"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-c", RUN, mode, str(modules), *argv],
        cwd=ROOT, capture_output=True, env=env, timeout=300,
    )  # fmt: skip
    return done, json.loads(modules.read_text())


def _damaged(root: Path) -> tuple[Path, Path | None]:
    """The markup store with rows another writer broke: a BLOB `data`, bytes that are not UTF-8, a stream id
    that is an integer, a sequence that is text."""
    db, project = make_store_sync("markup", root)
    with sqlite3.connect(db) as c:
        ids = [r[0] for r in c.execute("SELECT id FROM events WHERE kind_tag IN ('llm_call_started', "
                                       "'tool_call_completed', 'message_appended') ORDER BY id")]  # fmt: skip
        c.execute("UPDATE events SET data = CAST(data AS BLOB) WHERE id = ?", (ids[3],))
        text = c.execute("SELECT CAST(data AS BLOB) FROM events WHERE id = ?", (ids[5],)).fetchone()[0]
        c.execute(
            "UPDATE events SET data = CAST(? AS TEXT) WHERE id = ?", (text.replace(b'":"', b'":"\xff', 1), ids[5])
        )
        c.execute("UPDATE events SET stream_id = 12345 WHERE id = ?", (ids[9],))
        c.execute("UPDATE events SET sequence = 'x7' WHERE id = ?", (ids[11],))
    c.close()
    return db, project


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path | None]]:
    root = tmp_path_factory.mktemp("inline")
    stores = {name: make_store_sync(name, root / name) for name in [*HOSTILE, UNREADABLE]}
    stores["damaged"] = _damaged(root / "damaged")
    return stores


def _first_run(db: Path) -> str | None:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        row = c.execute("SELECT stream_id FROM events WHERE typeof(stream_id) = 'text' AND stream_id NOT LIKE "
                        "'%:step:%' AND instr(stream_id, char(0)) = 0 ORDER BY id LIMIT 1").fetchone()  # fmt: skip
    c.close()
    return None if row is None else str(row[0])


def _same_as_the_loop(tmp: Path, *args: str, opened: bool = True) -> subprocess.CompletedProcess[bytes]:
    """`opened`: the store is opened (not refused before: a missing file, a folder without a store)."""
    inline, loaded = _replay("inline", tmp, *args)
    loop, loop_loaded = _replay("loop", tmp, *args)
    assert loaded == [], f"replay {args} loaded {loaded}"
    assert ("asyncio" in loop_loaded) is opened  # (the oracle did take the event loop's path)
    assert (inline.returncode, inline.stderr) == (loop.returncode, loop.stderr), args
    assert inline.stdout == loop.stdout, args
    return inline


@pytest.mark.parametrize("name", [*HOSTILE, UNREADABLE, "damaged"])
def test_replay_reads_hostile_stores_as_the_event_loop_does(
    name: str, hostile: dict[str, tuple[Path, Path | None]], tmp_path: Path
) -> None:
    db, project = hostile[name]
    pre = [] if project is None else ["--project", str(project)]
    outputs = [_same_as_the_loop(tmp_path, str(db), *pre, *form) for form in ([], ["--json"], ["--json", "--messages"])]
    run = _first_run(db)
    if run is not None:
        _same_as_the_loop(tmp_path, str(db), *pre, "--json", "-r", run)
    if name in ("markup", "unknown_kinds", "damaged"):
        assert outputs[1].returncode == 0 and outputs[1].stdout.count(b"\n") > 10  # (calls were replayed)
    if name in (UNREADABLE, "damaged"):
        assert b"skipped unreadable" in outputs[0].stderr


@pytest.mark.parametrize("scenario", ["chat_profile", "coding_compaction", "hard_cap", "memory"])
def test_replay_reads_recorded_stores_as_the_event_loop_does(scenario: str, tmp_path: Path) -> None:
    db = ORACLE / scenario / "events.db"
    for form in (["--json"], [], ["--json", "--set", "observation_window=2"]):
        _same_as_the_loop(tmp_path, str(db), *form)
    _same_as_the_loop(tmp_path, str(db), "--json", "--project", str(ORACLE / scenario / "project"))


@pytest.mark.parametrize(
    "store",
    ["missing.db", "not_zymi.db", "garbage.db", "folder"],
)
def test_replay_errors_read_as_on_the_event_loop(store: str, tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "not_zymi.db") as c:
        c.execute("CREATE TABLE t (x)")
    c.close()
    (tmp_path / "garbage.db").write_bytes(b"not a database at all " * 200)
    (tmp_path / "folder").mkdir()
    opened = store not in ("missing.db", "folder")
    done = _same_as_the_loop(tmp_path, str(tmp_path / store), "--json", opened=opened)
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr


def test_an_inline_reader_waits_for_a_lock_then_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "journal.db"
    shutil.copy(ORACLE / "coding_compaction" / "events.db", db)
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA journal_mode=DELETE")
    c.close()
    monkeypatch.setattr(sqlite_read, "LOCK_WAIT_S", 0.6)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreLocked, match="is locked by another process"):
            run_inline(SqliteReader.open(db, inline=True))
        assert time.monotonic() - started >= 0.6  # it waited (sleeping, retrying), then gave up
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    reader = run_inline(SqliteReader.open(db, inline=True))
    assert run_inline(reader.max_global_id()) > 0
    run_inline(reader.close())


def test_run_inline_refuses_a_coroutine_that_waits_on_the_loop() -> None:
    with pytest.raises(AwaitedLoop):
        run_inline(asyncio.sleep(0))


@pytest.mark.parametrize("name", ["markup", "unknown_kinds", UNREADABLE, "damaged"])
def test_rent_find_context_and_exports_read_inline_as_the_event_loop_does(
    name: str, hostile: dict[str, tuple[Path, Path | None]], tmp_path: Path
) -> None:
    """The other commands that replay a store whole or by step (`commands.common.run_reading`); `context`
    in each form, and its errors for a call or a stream not there."""
    db, project = hostile[name]
    pre = [] if project is None else ["--project", str(project)]
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        step, seq = c.execute(
            "SELECT stream_id, MAX(sequence) FROM events WHERE kind_tag = 'llm_call_started' AND stream_id LIKE "
            "'%:step:%' GROUP BY stream_id ORDER BY stream_id LIMIT 1"
        ).fetchone()
        (first,) = c.execute("SELECT MIN(stream_id) FROM events WHERE stream_id LIKE '%:step:%'").fetchone()
    c.close()
    at = ["--step-stream", step, "--seq", str(seq)]
    _inline_as_on_the_loop(
        tmp_path,
        ["export", str(db), *pre, "--format", "otel"],
        ["export", str(db), *pre, "--format", "lhar"],
        ["rent", str(db), *pre, "--step-stream", first, "--window", "2"],
        ["find", "workspace", str(db), *pre, "--step-stream", first, "--json"],
        ["context", str(db), *pre, *at],
        ["context", str(db), *pre, *at, "--format", "json"],
        ["context", str(db), *pre, *at, "--format", "md", "--profile", "coding"],
        ["context", str(db), *at, "--json"],
    )
    _inline_as_on_the_loop(
        tmp_path,
        ["context", str(db), *pre, "--step-stream", step, "--seq", "99999"],
        ["context", str(db), *pre, "--step-stream", "no-such:step:x", "--seq", "1"],
        ok=False,
    )


def _inline_as_on_the_loop(tmp_path: Path, *argvs: list[str], ok: bool = True) -> None:
    """Each command line run inline and on the event loop: the same exit code, stderr and stdout, byte
    for byte, and inline with no asyncio, aiosqlite or ssl loaded. `ok`: each succeeds (else each fails)."""
    for argv in argvs:
        inline, loaded = _command("inline", tmp_path, *argv)
        loop, loop_loaded = _command("loop", tmp_path, *argv)
        assert loaded == [], f"{argv[0]} loaded {loaded}"
        assert "asyncio" in loop_loaded  # (the oracle did take the event loop's path)
        assert (inline.returncode, inline.stderr) == (loop.returncode, loop.stderr), argv
        assert inline.stdout == loop.stdout, argv
        if ok:
            assert inline.returncode == 0 and inline.stdout.strip(), (argv, inline.stderr)
        else:
            assert inline.returncode != 0 and inline.stderr.strip(), argv
