"""Verification walks the whole store in one pass, and still in sequence order when ids are not."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from zymi_tui.events.hashchain import ChainRow, ChainWalker, StreamVerdict, column_text
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.verify import verify_store

from .conftest import copy_store, oracle_db, write_sql


async def verdicts(db: Path) -> dict[str, tuple[bool, int | None, int]]:
    async with await SqliteReader.open(db) as reader:
        return {v.stream_id: (v.ok, v.bad_sequence, v.verified) for v in (await verify_store(reader)).verdicts}


def longest_stream(db: Path) -> tuple[str, int]:
    con = sqlite3.connect(db)
    stream, n = con.execute("SELECT stream_id, count(*) FROM events GROUP BY 1 ORDER BY 2 DESC LIMIT 1").fetchone()
    con.close()
    return stream, n


async def test_rows_whose_ids_run_against_their_sequence_verify_in_sequence_order(tmp_path: Path) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    stream, n = longest_stream(db)
    before = await verdicts(db)
    write_sql(
        db, "UPDATE events SET id = id + (SELECT max(id) FROM events) WHERE stream_id = ? AND sequence <= 3", stream
    )
    after = await verdicts(db)
    assert after == before and after[stream] == (True, None, n)


async def test_a_changed_row_is_named_in_a_store_of_many_streams(tmp_path: Path) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    stream, _ = longest_stream(db)
    write_sql(db, "UPDATE events SET data = replace(data, '\"source\":\"', '\"source\":\"x') WHERE stream_id = ? "
                  "AND sequence = 5", stream)  # fmt: skip
    got = await verdicts(db)
    assert got[stream][:2] == (False, 5)
    assert all(ok for s, (ok, _, _) in got.items() if s != stream)


TAMPERED = {  # what is changed, and whether a chain then breaks (a BLOB holds the same bytes: it hashes the same)
    "a BLOB data column": ("UPDATE events SET data = CAST(data AS BLOB) WHERE id IN (5, 9)", False),
    "a BLOB stream id": ("UPDATE events SET stream_id = CAST(stream_id AS BLOB) WHERE id = 7", False),
    "a changed row": ("UPDATE events SET data = replace(data, 'a', 'b') WHERE id = 20", True),
    "a changed link": ("UPDATE events SET prev_hash = 'v2:00' WHERE id = 30", True),
    "a deleted row": ("DELETE FROM events WHERE id = 40", True),
    "a text sequence": ("UPDATE events SET sequence = 'x' WHERE id = 50", True),
    "a numeric event id": ("UPDATE events SET event_id = 12345 WHERE id = 60", True),
    "a v1 hash": ("UPDATE events SET hash = substr(hash, 4) WHERE id = 70", True),
    "legacy rows": ("UPDATE events SET hash = '', prev_hash = '' WHERE id <= 3", True),
    "a link that is not UTF-8": (
        "UPDATE events SET prev_hash = CAST(CAST(prev_hash AS BLOB) || X'ff' AS TEXT) WHERE id = 12",
        True,
    ),
}


Verdict = tuple[bool, int | None, int, int, str | None]


def verdicts_of(verdicts: dict[str, StreamVerdict]) -> dict[str, Verdict]:
    return {s: (v.ok, v.bad_sequence, v.verified, v.legacy, v.problem) for s, v in verdicts.items()}


def walked_row_by_row(db: Path, heads: dict[str, tuple[int, str]]) -> dict[str, Verdict]:
    """Every row in id order through `ChainWalker.feed`, one walker per stream, no inline path."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.text_factory = column_text  # text that is not UTF-8 read as its bytes
    walkers: dict[str, ChainWalker] = {}
    for gid, eid, stream, seq, data, prev, digest in con.execute(
        "SELECT id, event_id, stream_id, sequence, data, prev_hash, hash FROM events ORDER BY id"
    ):
        s = column_text(stream)
        walker = walkers.setdefault(s, ChainWalker(s, heads.get(s)))
        walker.feed(ChainRow(gid, column_text(eid), seq, column_text(data), column_text(prev), column_text(digest)))
    con.close()
    return verdicts_of({s: w.verdict for s, w in walkers.items()})


@pytest.mark.parametrize(("sql", "breaks"), TAMPERED.values(), ids=TAMPERED.keys())
async def test_the_one_pass_check_finds_what_the_row_by_row_walk_finds(tmp_path: Path, sql: str, breaks: bool) -> None:
    """The one-pass scan checks intact v2 rows inline: on a tampered store it must reach the verdicts of
    `ChainWalker` fed every row in the same order (before the stream-heads check, which both share)."""
    db = copy_store(oracle_db("coding_default"), tmp_path)
    con = sqlite3.connect(db)
    con.execute(sql)
    con.commit()
    con.close()
    async with await SqliteReader.open(db) as reader:
        heads = await reader.stream_heads()
        scan = await reader.scan_chains(heads)
    got = verdicts_of(scan.verdicts())
    assert got == walked_row_by_row(db, heads)
    assert any(not ok for ok, *_ in got.values()) == breaks


async def test_a_store_kept_in_utf16_verifies_as_its_utf8_twin(tmp_path: Path) -> None:
    """SQLite hands a UTF-16 store's text over as UTF-8, which is what the chain hashed: such a store
    verifies like the same rows kept in UTF-8 (its columns cannot be hashed as the bytes they hold)."""
    src = oracle_db("chat_profile")
    twin = tmp_path / "utf16.db"
    old = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    con = sqlite3.connect(twin)
    con.execute("PRAGMA encoding = 'UTF-16le'")
    for (sql,) in old.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"):
        con.execute(sql)
    for table in ("events", "stream_heads"):
        rows = old.execute(f"SELECT * FROM {table}").fetchall()
        con.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
    con.commit()
    old.close()
    assert con.execute("PRAGMA main.encoding").fetchone()[0] == "UTF-16le"
    con.close()
    got = await verdicts(twin)
    assert got == await verdicts(src)
    assert len(got) > 1 and all(ok for ok, _, _ in got.values())
