"""`migrate`: the real engine's stores, copied to Postgres and back, row for row, resumably; every
reader (events, runs, verify, replay) says the same from the copy as from the original."""

from __future__ import annotations

import asyncio
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from zymi_tui.events.factory import open_writer
from zymi_tui.events.kinds import Event, ResponseReady
from zymi_tui.events.location import location_of

from .conftest import SCENARIOS, copy_store, oracle_db, zymi_bin
from .test_postgres_helpers import pg_url
from .test_postgres_helpers import run_cli as cli

__all__ = ["pg_url"]


def sqlite_rows(db: Path, table: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return con.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


def real_zymi_summary(db: Path, tmp: Path) -> str:
    """What the real engine's `zymi verify` says about a SQLite store."""
    project = tmp / "zymi_project"
    (project / ".zymi").mkdir(parents=True)
    shutil.copy(db, project / ".zymi" / "events.db")
    zymi = zymi_bin()
    assert zymi
    done = subprocess.run([zymi, "verify", "--no-venv", "-d", str(project)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return next(line for line in done.stdout.splitlines() if line.startswith("Verified "))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_oracle_store_migrates_to_postgres_and_back(scenario: str, pg_url: str, tmp_path: Path) -> None:
    src = copy_store(oracle_db(scenario), tmp_path / "src")
    done = cli("migrate", str(src), pg_url)
    assert done.returncode == 0, done.stderr
    assert re.search(r"Copied (\d+) event", done.stdout)

    verify = cli("verify", pg_url)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    if zymi_bin():
        assert verify.stdout.strip().splitlines()[-1] == real_zymi_summary(oracle_db(scenario), tmp_path)

    for args in (("events", "--raw", "--all"), ("runs", "--raw"), ("runs", "--raw", "--turns")):
        from_pg, from_sqlite = cli(*args, pg_url), cli(*args, str(src))
        assert from_pg.returncode == from_sqlite.returncode == 0
        assert from_pg.stdout == from_sqlite.stdout and from_pg.stdout

    project = str(oracle_db(scenario).parent / "project")
    replay = [cli("replay", "--project", project, "--json", "--messages", store) for store in (pg_url, str(src))]
    assert replay[0].returncode == replay[1].returncode == 0, replay[0].stderr
    assert replay[0].stdout == replay[1].stdout and replay[0].stdout.count("\n") >= 1

    back = tmp_path / "back" / "events.db"
    done = cli("migrate", pg_url, str(back))
    assert done.returncode == 0, done.stderr
    for table in ("events", "stream_heads"):
        assert sqlite_rows(back, table) == sqlite_rows(oracle_db(scenario), table)


def test_migrate_resumes_and_never_copies_twice(pg_url: str, tmp_path: Path) -> None:
    full = copy_store(oracle_db("coding_default"), tmp_path / "full")
    total = len(sqlite_rows(full, "events"))
    # what an interrupted copy leaves behind: the batches committed so far, a prefix by id
    partial = copy_store(full, tmp_path / "partial")
    with sqlite3.connect(partial) as con:
        con.execute("DELETE FROM events WHERE id > 100")
        con.execute("DELETE FROM stream_heads")
    assert cli("migrate", str(partial), pg_url, "--batch", "7").returncode == 0

    done = cli("migrate", str(full), pg_url, "--batch", "7")
    assert done.returncode == 0, done.stderr
    assert f"Copied {total - 100} event(s) (100 were already there)" in done.stdout
    done = cli("migrate", str(full), pg_url)
    assert f"Copied 0 event(s) ({total} were already there)" in done.stdout
    assert cli("verify", pg_url).returncode == 0

    back = tmp_path / "back.db"
    assert cli("migrate", pg_url, str(back)).returncode == 0
    assert sqlite_rows(back, "events") == sqlite_rows(full, "events")
    assert sqlite_rows(back, "stream_heads") == sqlite_rows(full, "stream_heads")

    # the copy stays appendable: ids continue after the copied ones, chains continue
    stream = sqlite_rows(full, "events")[-1][2]

    async def append() -> tuple[int, int]:
        async with await open_writer(location_of(pg_url)) as w:
            se = await w.append(Event.new(str(stream), ResponseReady(conversation_id="c", content="more"), "t"))
            return se.global_id, se.event.sequence

    last = sqlite_rows(full, "events")[-1]
    assert asyncio.run(append()) == (int(str(last[0])) + 1, int(str(last[3])) + 1)
    assert cli("verify", pg_url).returncode == 0


def test_migrate_refuses_a_target_holding_other_events(pg_url: str, tmp_path: Path) -> None:
    async def append() -> None:
        async with await open_writer(location_of(pg_url)) as w:
            await w.append(Event.new("other", ResponseReady(conversation_id="c", content="x"), "t"))

    asyncio.run(append())
    done = cli("migrate", str(copy_store(oracle_db("coding_default"), tmp_path)), pg_url)
    assert done.returncode == 2
    assert "not a copy of" in done.stderr and len(done.stderr.strip().splitlines()) == 1
