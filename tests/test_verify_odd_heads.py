"""A `stream_heads` row whose sequence is not an integer (text, a real: a tampered store) is reported as
that stream broken at its head, as real `zymi verify` reports it failed; the others verify. The scan in one
part and in two (the split is forced on a small store) agree. Found by verify39: it was a TypeError."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.waiting import LIMIT

from .conftest import copy_store, oracle_db, requires_zymi, write_sql, zymi_tui_bin
from .test_store_verify import zymi_verify


def _tampered(tmp_path: Path, value: object) -> tuple[Path, str, list[str]]:
    db = copy_store(oracle_db("memory"), tmp_path / "store")
    con = sqlite3.connect(db)
    streams = [s for (s,) in con.execute("SELECT stream_id FROM stream_heads ORDER BY stream_id")]
    con.close()
    write_sql(db, "UPDATE stream_heads SET last_sequence = ? WHERE stream_id = ?", value, streams[0])
    return db, streams[0], streams[1:]


@pytest.mark.parametrize("value", ["x", 30.5])  # ("30" would be stored as 30: INTEGER affinity)
@pytest.mark.parametrize("split", [False, True])
def test_a_head_without_an_integer_sequence_breaks_its_stream(tmp_path: Path, value: object, split: bool) -> None:
    db, odd, others = _tampered(tmp_path, value)
    env = {**os.environ, "ZYMI_TUI_SPLIT_IDS": "2" if split else "100000000"}
    proc = subprocess.run([zymi_tui_bin(), "verify", "-v", str(db)], capture_output=True, text=True, env=env,
                          timeout=LIMIT)  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [ln for ln in lines if "✗" in ln] == [
        f"  ✗ {odd}: BROKEN at its head — stream_heads records a sequence that is not an integer: {str(value)!r}"
    ]
    assert all(any(ln.startswith(f"  ✓ {s}: ") for ln in lines) for s in others), lines
    assert f"1 of {len(others) + 1} stream(s) broken" in proc.stderr


@requires_zymi
def test_zymi_fails_the_same_stream(tmp_path: Path) -> None:
    db, odd, others = _tampered(tmp_path, "x")
    theirs = zymi_verify(db)
    assert theirs.returncode != 0
    failed = [ln.strip() for ln in (theirs.stdout + theirs.stderr).splitlines() if "FAILED" in ln]
    assert len(failed) == 1 and failed[0].startswith(f"{odd}: FAILED"), theirs.stdout + theirs.stderr
    for s in others:
        assert f"{s}: " in theirs.stdout + theirs.stderr
