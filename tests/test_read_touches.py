"""Exactly what reading a store touches, as the README states it.

The `.db` and `-wal` files keep every byte. Beside a WAL-mode store SQLite (for any reader, ours and
zymi's) keeps the `-shm` index up to date, and creates `-wal` (empty) and `-shm` when they are missing.
A rollback-journal store is not touched at all.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.waiting import LIMIT

from .conftest import copy_store, oracle_db, sha256, snapshot_dir


def _read(db: Path) -> None:
    for command in ("events", "runs", "verify", "replay"):
        done = subprocess.run(
            [sys.executable, "-m", "zymi_tui", command, str(db)], capture_output=True, text=True, timeout=LIMIT
        )
        assert done.returncode == 0, done.stderr


def test_rollback_journal_store_is_not_touched(tmp_path: Path) -> None:
    db = copy_store(oracle_db("memory"), tmp_path)
    before = {**snapshot_dir(tmp_path), "mtime": str(os.stat(db).st_mtime_ns)}
    _read(db)
    assert {**snapshot_dir(tmp_path), "mtime": str(os.stat(db).st_mtime_ns)} == before


def test_wal_store_without_wal_file_gets_an_empty_wal_and_an_index(tmp_path: Path) -> None:
    db = copy_store(oracle_db("memory"), tmp_path)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.db"]
    before = sha256(db)
    _read(db)
    assert sha256(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.db", "events.db-shm", "events.db-wal"]
    assert (tmp_path / "events.db-wal").stat().st_size == 0


def test_wal_store_with_a_writer_keeps_db_and_wal_bytes(tmp_path: Path) -> None:
    db = copy_store(oracle_db("memory"), tmp_path)
    writer = sqlite3.connect(db)  # kept open, never checkpointing: its commits stay in the -wal file
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("PRAGMA user_version = 7")  # a change no reader looks at
    writer.commit()
    wal = Path(f"{db}-wal")
    before = (sha256(db), sha256(wal))
    assert wal.stat().st_size > 0
    _read(db)
    assert (sha256(db), sha256(wal)) == before
    writer.close()
