"""Verification walks the whole store in one pass, and still in sequence order when ids are not."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from zymi_tui.events.sqlite import SqliteReader
from zymi_tui.events.verify import verify_store

from .conftest import copy_store, oracle_db, write_sql


async def verdicts(db: Path) -> dict[str, tuple[bool, int | None, int]]:
    async with await SqliteReader.open(db) as reader:
        return {v.stream_id: (v.ok, v.bad_sequence, v.verified) for v in await verify_store(reader)}


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
