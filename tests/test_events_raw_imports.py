"""`events --all --raw` of a SQLite store reads it in its own thread with no event loop: asyncio (with its ssl
support), aiosqlite, `concurrent.futures` and `subprocess` are not imported (a listing below `raw_pair`'s
threshold starts no process). The partner process of a paired listing imports neither asyncio, nor
subprocess, nor the reader's modules. Each still writes what real `zymi events --raw` writes."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.loaded_modules import RUN, loaded

ORACLE = Path(__file__).parent / "oracle"
ZYMI = Path(sys.executable).parent / "zymi"
NOT_LOADED = ("asyncio", "aiosqlite", "ssl", "concurrent", "subprocess")  # and their submodules
PARTNER_NOT_LOADED = (*NOT_LOADED, "zymi_tui.events.store", "zymi_tui.events.sqlite_read")


PARTNER = """
import json, runpy, sys
modules_file = sys.argv.pop(1)
try:
    runpy.run_module("zymi_tui.events.raw_pair", run_name="__main__")
finally:
    with open(modules_file, "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def zymis_lines(db: Path, tmp_path: Path) -> bytes:
    project = tmp_path / "zymi"
    (project / ".zymi").mkdir(parents=True)
    shutil.copy(db, project / ".zymi" / "events.db")
    argv = [str(ZYMI), "--no-venv", "events", "-d", str(project), "--raw", "-l", "100000000"]
    return subprocess.run(argv, capture_output=True, check=True).stdout


def test_a_listing_loads_no_event_loop_thread_or_process_modules(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    shutil.copy(ORACLE / "coding_default" / "events.db", db)
    modules = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(modules), "events", str(db), "--all", "--raw"],
        cwd=tmp_path, capture_output=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == zymis_lines(db, tmp_path)
    assert loaded(modules, NOT_LOADED) == []


def test_the_partner_process_loads_no_event_loop_process_or_reader_modules(tmp_path: Path) -> None:
    db = ORACLE / "coding_default" / "events.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    upto = con.execute("SELECT MAX(id) FROM events").fetchone()[0]
    con.close()
    page = upto // 2  # the partner writes the odd pages: here the second, ids (page, 2 * page]
    modules = tmp_path / "modules.json"
    answer_r, answer_w = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-c", PARTNER, str(modules), f"file:{db}?mode=ro", str(2 * page), str(page),
             str(answer_w)],
            input=b"t", capture_output=True, pass_fds=(answer_w,), timeout=300,
        )  # fmt: skip
        os.close(answer_w)
        answer = os.read(answer_r, 16)
    finally:
        os.close(answer_r)
    assert done.returncode == 0, done.stderr
    assert answer == b"w"  # its page written
    assert done.stdout == b"".join(zymis_lines(db, tmp_path).splitlines(keepends=True)[page : 2 * page])
    assert loaded(modules, PARTNER_NOT_LOADED) == []
