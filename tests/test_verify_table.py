"""A table of damaged stores, each judged by the real `zymi verify` and by ours, both run here.

The rule (issue 29): on every store zymi rejects, ours rejects too; ours also rejects what zymi's
check cannot see (a chain rewritten over removed rows, an index whose entries do not match its
table). Each row of `TABLE` gives the verdicts expected of both, as observed with zymi-core 0.9.3:
a change in zymi's verdict fails the test as loudly as a change in ours.

`concurrent_writers.db.gz` (tests/damaged/) is a store that 4 `zymi-tui run` processes of commit
4d1e41b corrupted (they dropped SQLite's locks, issue 29): `integrity_check` finds rowids out of
order and rows missing from every index; zymi reports a broken chain; our verify of that commit
passed it.
"""

from __future__ import annotations

import gzip
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.waiting import LIMIT
from zymi_tui.events.hashchain import hash_v2

from .conftest import copy_store, oracle_db, requires_zymi, zymi_bin

pytestmark = requires_zymi

DAMAGED = Path(__file__).parent / "damaged"
SOURCE = "memory"  # three streams, one of 30 rows


def _longest(con: sqlite3.Connection) -> str:
    row = con.execute("SELECT stream_id FROM events GROUP BY stream_id ORDER BY count(*) DESC LIMIT 1").fetchone()
    return str(row[0])


def _edit(db: Path, change: Callable[[sqlite3.Connection, str], object]) -> None:
    con = sqlite3.connect(db)
    try:
        change(con, _longest(con))
        con.commit()
    finally:
        con.close()


def _rechain(con: sqlite3.Connection, stream: str) -> None:
    """Recompute every hash of `stream` over its rows as they now are, and its head (what an attacker
    who knows the scheme does after removing a row): each link then holds."""
    prev, seq = "", 0
    for gid, event_id, seq, data in con.execute(
        "SELECT id, event_id, sequence, data FROM events WHERE stream_id = ? ORDER BY sequence", (stream,)
    ).fetchall():
        digest = hash_v2(event_id, seq, data, prev)
        con.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE id = ?", (prev, digest, gid))
        prev = digest
    con.execute("UPDATE stream_heads SET last_sequence = ?, last_hash = ? WHERE stream_id = ?", (seq, prev, stream))


def intact(db: Path) -> None:
    pass


def tampered(db: Path) -> None:
    _edit(db, lambda c, s: c.execute(
        "UPDATE events SET data = replace(data, '\"source\":\"', '\"source\":\"x') "
        "WHERE stream_id = ? AND sequence = 7", (s,)))  # fmt: skip


def truncated_tail(db: Path) -> None:
    _edit(db, lambda c, s: c.execute(
        "DELETE FROM events WHERE stream_id = ? "
        "AND sequence > (SELECT max(sequence) - 3 FROM events WHERE stream_id = ?)", (s, s)))  # fmt: skip


def truncated_file(db: Path) -> None:
    """The file cut to half its size (a copy interrupted, a full disk)."""
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)


def deleted_stream(db: Path) -> None:
    _edit(db, lambda c, s: c.execute("DELETE FROM events WHERE stream_id = ?", (s,)))


def changed_head(db: Path) -> None:
    _edit(db, lambda c, s: c.execute("UPDATE stream_heads SET last_hash = 'v2:' || hex(randomblob(32)) "
                                     "WHERE stream_id = ?", (s,)))  # fmt: skip


def sequence_gap(db: Path) -> None:
    _edit(db, lambda c, s: c.execute("DELETE FROM events WHERE stream_id = ? AND sequence = 12", (s,)))


def sequence_gap_rechained(db: Path) -> None:
    def change(con: sqlite3.Connection, stream: str) -> None:
        con.execute("DELETE FROM events WHERE stream_id = ? AND sequence = 12", (stream,))
        _rechain(con, stream)

    _edit(db, change)


def duplicate_sequence(db: Path) -> None:
    """A second row at sequence 9, linked to row 8 and hashed right (a fork of the chain)."""

    def change(con: sqlite3.Connection, stream: str) -> None:
        event_id, data, prev, ts, tag, source = con.execute(
            "SELECT event_id, data, prev_hash, timestamp, kind_tag, source FROM events "
            "WHERE stream_id = ? AND sequence = 9",
            (stream,),
        ).fetchone()
        twin_id = event_id[:-4] + "ffff"
        twin = data.replace(event_id, twin_id)
        con.execute(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source, prev_hash, hash) "
            "VALUES (?, ?, 9, ?, ?, ?, ?, ?, ?)",
            (twin_id, stream, ts, tag, twin, source, prev, hash_v2(twin_id, 9, twin, prev)),
        )

    _edit(db, change)


def duplicate_sequence_rechained(db: Path) -> None:
    """Two rows at sequence 9, the chain recomputed over both in order: every link holds."""

    def change(con: sqlite3.Connection, stream: str) -> None:
        row = con.execute(
            "SELECT event_id, data, timestamp, kind_tag, source FROM events WHERE stream_id = ? AND sequence = 9",
            (stream,),
        ).fetchone()
        twin_id = row[0][:-4] + "ffff"
        con.execute(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source) "
            "VALUES (?, ?, 9, ?, ?, ?, ?)",
            (twin_id, stream, row[2], row[3], row[1].replace(row[0], twin_id), row[4]),
        )
        _rechain(con, stream)

    _edit(db, change)


def row_missing_from_index(db: Path) -> None:
    """The (stream_id, sequence) index rebuilt without one row, its schema left saying it holds them
    all: what `integrity_check` reports as "row N missing from index" after writers lost their locks."""

    def change(con: sqlite3.Connection, stream: str) -> None:
        (gid,) = con.execute("SELECT id FROM events WHERE stream_id = ? AND sequence = 15", (stream,)).fetchone()
        (full,) = con.execute("SELECT sql FROM sqlite_master WHERE name = 'idx_events_stream_seq'").fetchone()
        con.execute("DROP INDEX idx_events_stream_seq")
        con.execute(f"CREATE INDEX idx_events_stream_seq ON events(stream_id, sequence) WHERE id <> {gid}")
        con.commit()
        con.execute("PRAGMA writable_schema = ON")
        con.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'idx_events_stream_seq'", (full,))

    _edit(db, change)


def concurrent_writers(db: Path) -> None:
    with gzip.open(DAMAGED / "concurrent_writers.db.gz") as src, db.open("wb") as out:
        shutil.copyfileobj(src, out)


# store -> (zymi verify passes, ours passes)
TABLE: dict[Callable[[Path], None], tuple[bool, bool]] = {
    intact: (True, True),
    tampered: (False, False),
    truncated_tail: (False, False),
    truncated_file: (False, False),
    deleted_stream: (False, False),
    changed_head: (False, False),
    sequence_gap: (False, False),
    sequence_gap_rechained: (True, False),
    duplicate_sequence: (False, False),
    duplicate_sequence_rechained: (True, False),
    row_missing_from_index: (False, False),
    concurrent_writers: (False, False),
}


def _zymi_passes(db: Path) -> bool:
    """`zymi verify -d DIR` reads DIR/.zymi/events.db (and may write to it): a copy of its own."""
    project = db.parent / "zymi-project"
    (project / ".zymi").mkdir(parents=True)
    shutil.copy(db, project / ".zymi" / "events.db")
    bin_ = zymi_bin()
    assert bin_
    done = subprocess.run([bin_, "verify", "-d", str(project)], capture_output=True, text=True, timeout=LIMIT)
    return done.returncode == 0


def _ours(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zymi_tui", "verify", str(db)], capture_output=True, text=True, timeout=LIMIT
    )


@pytest.mark.parametrize(("make", "expected"), TABLE.items(), ids=[f.__name__ for f in TABLE])
def test_each_store_gets_the_verdicts_of_the_table(
    tmp_path: Path, make: Callable[[Path], None], expected: tuple[bool, bool]
) -> None:
    db = copy_store(oracle_db(SOURCE), tmp_path / "store")
    make(db)
    zymi_ok = _zymi_passes(db)
    ours = _ours(db)
    assert (zymi_ok, ours.returncode == 0) == expected, ours.stdout + ours.stderr
    if not zymi_ok:
        assert ours.returncode != 0, "zymi rejects this store and ours passes it"
    if ours.returncode:
        assert ours.returncode in (1, 2) and "Traceback" not in ours.stderr
        assert len(ours.stderr.strip().splitlines()) == 1, ours.stderr  # one line says why


def test_a_damaged_store_is_named_damaged_with_what_sqlite_found(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    concurrent_writers(db)
    ours = _ours(db)
    assert ours.returncode == 1
    assert "the store itself is damaged" in ours.stderr
    assert "quick_check: On tree page 69 cell 4: Rowid 203 out of order" in ours.stdout
    assert "index idx_events_stream_seq disagrees with the table" in ours.stdout


def test_a_row_missing_from_the_index_is_named(tmp_path: Path) -> None:
    db = copy_store(oracle_db(SOURCE), tmp_path)
    row_missing_from_index(db)
    con = sqlite3.connect(db)
    (gid,) = con.execute(
        "SELECT id FROM events NOT INDEXED WHERE sequence = 15 AND stream_id = ?", (_longest(con),)
    ).fetchone()
    found = con.execute("PRAGMA integrity_check").fetchall()
    con.close()
    assert found == [  # SQLite's own word
        (f"row {gid} missing from index idx_events_stream_seq",),
        ("wrong # of entries in index idx_events_stream_seq",),
    ]
    ours = _ours(db)
    assert ours.returncode == 1
    assert (
        f"index idx_events_stream_seq disagrees with the table (59 entries for 60 rows): rows missing from it: {gid}"
        in ours.stdout
    )


def test_thorough_runs_sqlites_integrity_check(tmp_path: Path) -> None:
    """quick_check does not compare index entries with rows; `--thorough` runs integrity_check, which does."""
    db = copy_store(oracle_db(SOURCE), tmp_path)
    row_missing_from_index(db)
    quick = _ours(db)
    thorough = subprocess.run(
        [sys.executable, "-m", "zymi_tui", "verify", "--thorough", str(db)],
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert "integrity_check" not in quick.stdout and "quick_check" not in quick.stdout
    assert thorough.returncode == 1
    assert "SQLite's integrity_check: row " in thorough.stdout and "missing from index" in thorough.stdout
