"""What `verify` holds per stream on a store of many streams (50,000 on a million events of small runs): the heads
it reads, and the verdicts it hands out. Measured by tracemalloc in a fresh interpreter (nothing an earlier test
left alive moves the figures), on a store written here: the oracle's store plus STREAMS streams of ROWS rows, each
hashed by `v2` below (ADR-0040 written out, not the code under test), its head in `stream_heads`.

The answer keys are SQLite's: the number of streams the store holds, each verdict checked against it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from .conftest import copy_store, oracle_db

STREAMS, ROWS = 6000, 2

_MEASURE = """
import asyncio, gc, json, sys, tracemalloc
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.verify import verify_store

async def main(db):
    reader = await SqliteReader.open(db)
    try:
        gc.collect()
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        heads = await reader.stream_heads()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
        del heads
        gc.collect()
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        report = await verify_store(reader)
        verdicts = [(v.stream_id, v.ok, v.verified) for v in report.verdicts if v.stream_id.startswith("flat-")]
        peak = tracemalloc.get_traced_memory()[1] - start
        tracemalloc.stop()
    finally:
        await reader.close()
    print(json.dumps({"held": held, "peak": peak, "verdicts": verdicts, "ok": report.ok}))

asyncio.run(main(sys.argv[1]))
"""


def v2(event_id: str, sequence: int, data: str, prev: str) -> str:
    body = b"v2" + event_id.encode() + sequence.to_bytes(8, "little") + data.encode() + prev.encode()
    return "v2:" + hashlib.sha256(body).hexdigest()


def _many_streams(tmp_path: Path) -> Path:
    db = copy_store(oracle_db("memory"), tmp_path)
    con = sqlite3.connect(db)
    rows, heads = [], []
    for s in range(STREAMS):
        stream, prev = f"flat-{s:06d}-0000-4000-8000-000000000000:step:work", ""
        for seq in range(1, ROWS + 1):
            event_id, data = f"00000000-0000-4000-8000-{s:06d}{seq:06d}", json.dumps({"n": seq})
            digest = v2(event_id, seq, data, prev)
            rows.append((event_id, stream, seq, "2026-01-01T00:00:00Z", "note", data, "test", prev, digest))
            prev = digest
        heads.append((stream, ROWS, prev))
    with con:
        con.executemany(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source, prev_hash, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        con.executemany("INSERT INTO stream_heads VALUES (?, ?, ?)", heads)
    con.close()
    return db


def _measured(db: Path) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(db)], capture_output=True, text=True, timeout=300, check=True
    )
    got: dict[str, object] = json.loads(run.stdout)
    return got


def test_verify_holds_little_per_stream(tmp_path: Path) -> None:
    """The heads held packed (a stream's name, and its head's sequence and hash as 40 bytes, not a tuple, an int
    and a 116-byte string beside the name), and the verdicts made one at a time as they are handed out (not all
    at once). On main, 305 B a head held and a peak of 532 B a stream; here 200 B and 314 B."""
    db = _many_streams(tmp_path)
    got = _measured(db)
    con = sqlite3.connect(db)
    expected = [r[0] for r in con.execute("SELECT DISTINCT stream_id FROM events WHERE stream_id LIKE 'flat-%'")]
    con.close()
    verdicts = got["verdicts"]
    assert isinstance(verdicts, list)
    assert [s for s, _, _ in verdicts] == sorted(expected) and len(expected) == STREAMS
    assert all(ok and verified == ROWS for _, ok, verified in verdicts) and got["ok"]
    held, peak = got["held"], got["peak"]
    assert isinstance(held, int) and isinstance(peak, int)
    assert held / STREAMS < 250, f"{held / STREAMS:.0f} B held a head"
    # (the list of results above is the test's own, ~150 B a stream: inside the bound)
    assert peak / STREAMS < 420, f"{peak / STREAMS:.0f} B a stream at the peak"
