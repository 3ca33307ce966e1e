"""A store `migrate` left half-copied says so: `verify` fails naming it, `runs` warns, and running the same
migrate again finishes it (after which neither says anything and the mark is gone).

The copy is really interrupted: `zymi-tui migrate --batch 1` as a subprocess, sent SIGINT once the
target holds 30 rows; into a SQLite file and into Postgres.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest

from tests.conftest import cloned_runs, zymi_tui_bin
from tests.test_postgres_helpers import pg_url  # noqa: F401  (a fixture)
from tests.waiting import LIMIT
from zymi_tui.events.whole_rows import COPY_MARK

INTERRUPT_AT = 30


def _sqlite_rows(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(con.execute("SELECT count(*) FROM events").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _pg_fetch(url: str, sql: str) -> object:
    async def go() -> object:
        conn = await asyncpg.connect(url)
        try:
            return await conn.fetchval(sql)
        finally:
            await conn.close()

    return asyncio.run(go())


def _pg_rows(url: str) -> int:
    try:
        return int(str(_pg_fetch(url, "SELECT count(*) FROM events")))
    except asyncpg.UndefinedTableError:
        return 0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([zymi_tui_bin(), *args], capture_output=True, text=True, timeout=LIMIT)


def _interrupted_copy(src: Path, dst: str, rows: Callable[[], int]) -> None:
    proc = subprocess.Popen(
        [zymi_tui_bin(), "migrate", str(src), dst, "--batch", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + LIMIT
        while rows() < INTERRUPT_AT and proc.poll() is None:
            assert time.monotonic() < deadline, "migrate copied nothing"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=LIMIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    # the progress bar's last state, then one line; no traceback
    assert "Traceback" not in err and err.splitlines()[-1].startswith("interrupted (Ctrl-C): what was copied"), err
    assert err.count("interrupted") == 1, err


def _check(src: Path, dst: str, src_top: int, has_mark: Callable[[], bool]) -> None:
    verify = _cli("verify", dst)
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert "a copy that `zymi-tui migrate` has not finished" in verify.stderr and f"of {src_top}" in verify.stderr
    runs = _cli("runs", dst)
    assert runs.returncode == 0, runs.stderr
    assert "has not finished" in runs.stderr, runs.stderr
    assert has_mark()

    done = _cli("migrate", str(src), dst)
    assert done.returncode == 0, done.stderr
    verify = _cli("verify", dst)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "has not finished" not in _cli("runs", dst).stderr
    assert not has_mark()


@pytest.fixture
def src(tmp_path: Path) -> tuple[Path, int]:
    db = cloned_runs(tmp_path, 10)  # 1,740 rows: a copy one row a batch is still going at row 30
    con = sqlite3.connect(db)
    top = int(con.execute("SELECT max(id) FROM events").fetchone()[0])
    con.close()
    return db, top


def test_a_sqlite_copy_left_half_done_says_so(src: tuple[Path, int], tmp_path: Path) -> None:
    db, top = src
    dst = tmp_path / "copy" / "events.db"
    dst.parent.mkdir()
    _interrupted_copy(db, str(dst), lambda: _sqlite_rows(dst))

    def has_mark() -> bool:
        con = sqlite3.connect(dst)
        try:
            return bool(con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (COPY_MARK,)).fetchall())
        finally:
            con.close()

    _check(db, str(dst), top, has_mark)


def test_a_postgres_copy_left_half_done_says_so(src: tuple[Path, int], pg_url: str) -> None:  # noqa: F811
    db, top = src
    _interrupted_copy(db, pg_url, lambda: _pg_rows(pg_url))
    _check(db, pg_url, top, lambda: bool(_pg_fetch(pg_url, f"SELECT to_regclass('{COPY_MARK}') IS NOT NULL")))
