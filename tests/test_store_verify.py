"""Hash-chain verification, against the oracle stores and against the real `zymi verify`."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.waiting import LIMIT
from zymi_tui.events.hashchain import StreamVerdict
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.verify import verify_store

from .conftest import SCENARIOS, copy_store, oracle_db, requires_zymi, write_sql, zymi_bin


async def verify(db: Path, stream: str | None = None) -> dict[str, StreamVerdict]:
    async with await SqliteReader.open(db) as reader:
        return {v.stream_id: v for v in (await verify_store(reader, stream)).verdicts}


def zymi_verify(db: Path) -> subprocess.CompletedProcess[str]:
    """`zymi verify -d DIR` reads DIR/.zymi/events.db: give it a folder of its own (it writes to it)."""
    project = db.parent / "zymi-project"
    (project / ".zymi").mkdir(parents=True, exist_ok=True)
    copy_store(db, project / ".zymi")
    bin_ = zymi_bin()
    assert bin_
    return subprocess.run([bin_, "verify", "-d", str(project)], capture_output=True, text=True, timeout=LIMIT)


def pick_row(db: Path, where: str = "sequence > 1") -> tuple[int, str, int]:
    """A row in the middle of a chain of the store's longest stream: (global id, stream, sequence)."""
    con = sqlite3.connect(db)
    stream = con.execute("SELECT stream_id FROM events GROUP BY stream_id ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
    row: tuple[int, str, int] = con.execute(
        f"SELECT id, stream_id, sequence FROM events WHERE stream_id = ? AND {where} ORDER BY sequence LIMIT 1",
        (stream,),
    ).fetchone()
    con.close()
    return row


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_every_oracle_store_verifies(scenario: str, tmp_path: Path) -> None:
    db = copy_store(oracle_db(scenario), tmp_path)
    verdicts = await verify(db)
    total = sqlite3.connect(db).execute("SELECT count(*) FROM events").fetchone()[0]
    assert all(v.ok for v in verdicts.values()), [v.problem for v in verdicts.values() if not v.ok]
    assert sum(v.verified for v in verdicts.values()) == total


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_one_changed_byte_fails_naming_stream_and_sequence(scenario: str, tmp_path: Path) -> None:
    db = copy_store(oracle_db(scenario), tmp_path)
    gid, stream, seq = pick_row(db)
    con = sqlite3.connect(db)
    data: str = con.execute("SELECT data FROM events WHERE id = ?", (gid,)).fetchone()[0]
    i = data.index('"source":"') + len('"source":"')
    changed = data[:i] + ("X" if data[i] != "X" else "Y") + data[i + 1 :]  # one byte, JSON still valid
    con.execute("UPDATE events SET data = ? WHERE id = ?", (changed, gid))
    con.commit()
    con.close()
    verdicts = await verify(db)
    broken = [v for v in verdicts.values() if not v.ok]
    assert [(v.stream_id, v.bad_sequence, v.bad_global_id) for v in broken] == [(stream, seq, gid)]
    assert "hash mismatch" in (broken[0].problem or "")
    assert (await verify(db, stream))[stream].bad_sequence == seq


async def test_changed_sequence_column_is_caught(tmp_path: Path) -> None:
    """v2 hashes cover the sequence (ADR-0040): swapping two rows' sequences breaks the chain."""
    db = copy_store(oracle_db("coding_default"), tmp_path)
    _gid, stream, seq = pick_row(db, "sequence > 2")
    con = sqlite3.connect(db)
    con.execute("UPDATE events SET sequence = -1 WHERE stream_id = ? AND sequence = ?", (stream, seq))
    con.execute("UPDATE events SET sequence = ? WHERE stream_id = ? AND sequence = ?", (seq, stream, seq + 1))
    con.execute("UPDATE events SET sequence = ? WHERE stream_id = ? AND sequence = -1", (seq + 1, stream))
    con.commit()
    con.close()
    verdict = (await verify(db))[stream]
    assert not verdict.ok and verdict.bad_sequence == seq


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_deleted_tail_row_is_caught_through_stream_heads(scenario: str, tmp_path: Path) -> None:
    db = copy_store(oracle_db(scenario), tmp_path)
    con = sqlite3.connect(db)
    stream, last = con.execute(
        "SELECT stream_id, max(sequence) FROM events GROUP BY stream_id ORDER BY count(*) DESC LIMIT 1"
    ).fetchone()
    con.execute("DELETE FROM events WHERE stream_id = ? AND sequence = ?", (stream, last))
    con.commit()
    con.close()
    verdicts = await verify(db)
    broken = [v for v in verdicts.values() if not v.ok]
    assert [(v.stream_id, v.bad_sequence) for v in broken] == [(stream, last)]
    assert "truncated" in (broken[0].problem or "")


async def test_deleted_whole_stream_is_caught(tmp_path: Path) -> None:
    db = copy_store(oracle_db("memory"), tmp_path)
    con = sqlite3.connect(db)
    stream = con.execute("SELECT stream_id FROM events WHERE stream_id LIKE '%:step:%' LIMIT 1").fetchone()[0]
    con.execute("DELETE FROM events WHERE stream_id = ?", (stream,))
    con.commit()
    con.close()
    verdicts = await verify(db)
    assert not verdicts[stream].ok and verdicts[stream].rows == 0
    assert [s for s, v in verdicts.items() if not v.ok] == [stream]


def _v1(event_id: str, data: str, prev: str) -> str:
    return hashlib.sha256((event_id + data + prev).encode()).hexdigest()  # ADR-0035, written out here


def make_mixed_store(db: Path) -> tuple[str, str]:
    """One stream re-hashed as 0.7.x wrote it (v1, bare hex) and one with legacy (empty) hashes."""
    con = sqlite3.connect(db)
    streams = [r[0] for r in con.execute("SELECT stream_id FROM events GROUP BY stream_id ORDER BY count(*) DESC")]
    v1_stream, legacy_stream = streams[0], streams[1]
    prev = ""
    rows = con.execute(
        "SELECT id, event_id, data FROM events WHERE stream_id = ? ORDER BY sequence", (v1_stream,)
    ).fetchall()
    for gid, event_id, data in rows:
        h = _v1(event_id, data, prev)
        con.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE id = ?", (prev, h, gid))
        prev = h
    con.execute("UPDATE stream_heads SET last_hash = ? WHERE stream_id = ?", (prev, v1_stream))
    con.execute("UPDATE events SET prev_hash = '', hash = '' WHERE stream_id = ?", (legacy_stream,))
    con.execute("DELETE FROM stream_heads WHERE stream_id = ?", (legacy_stream,))
    con.commit()
    con.close()
    return v1_stream, legacy_stream


async def test_v1_and_legacy_rows(tmp_path: Path) -> None:
    db = copy_store(oracle_db("coding_default"), tmp_path)
    v1_stream, legacy_stream = make_mixed_store(db)
    verdicts = await verify(db)
    assert all(v.ok for v in verdicts.values())
    assert verdicts[v1_stream].verified == verdicts[v1_stream].rows > 0
    assert verdicts[legacy_stream].legacy == verdicts[legacy_stream].rows > 0
    assert verdicts[legacy_stream].verified == 0
    con = sqlite3.connect(db)  # now break a v1 row in the middle
    gid, seq = con.execute(
        "SELECT id, sequence FROM events WHERE stream_id = ? ORDER BY sequence LIMIT 1 OFFSET 2", (v1_stream,)
    ).fetchone()
    con.execute("UPDATE events SET data = replace(data, '\"sequence\":0', '\"sequence\":1') WHERE id = ?", (gid,))
    con.commit()
    con.close()
    assert (await verify(db))[v1_stream].bad_sequence == seq


@requires_zymi
async def test_the_real_engine_agrees(tmp_path: Path) -> None:
    """Same verdicts as `zymi verify` on a good store, a v1/legacy store and a tampered one."""
    good = copy_store(oracle_db("coding_default"), tmp_path / "good")
    mixed = copy_store(oracle_db("coding_default"), tmp_path / "mixed")
    make_mixed_store(mixed)
    bad = copy_store(oracle_db("coding_default"), tmp_path / "bad")
    gid, stream, _ = pick_row(bad)
    write_sql(bad, 'UPDATE events SET data = replace(data, \'"source":"\', \'"source":"x\') WHERE id = ?', gid)
    for db, ok in ((good, True), (mixed, True), (bad, False)):
        run = zymi_verify(db)
        assert (run.returncode == 0) is ok, run.stdout + run.stderr
        verdicts = await verify(db)
        assert all(v.ok for v in verdicts.values()) is ok
    assert f"{stream}: FAILED" in zymi_verify(bad).stdout
