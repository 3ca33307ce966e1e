"""What the split scan (`chain_split`) costs the starting process in memory when it hands the heads to its later
part: the heads are pickled by a thread straight into the part's stdin while the earlier part is scanned (the
moment the check's peak is set on a million-event store of many small runs). Their sequence and hash arrays
(40 B a head: 2 MB for 50,000 heads) are written from where they are, not copied first.

Measured by tracemalloc in a fresh interpreter, through `LaterPart._send` writing into a file as it writes into
the pipe. The answer key is SQLite's: every head as `stream_heads` holds it, read by `sqlite3`, against what
`pickle.load` makes of what was sent."""

from __future__ import annotations

import hashlib
import json
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

from .conftest import copy_store, oracle_db

HEADS = 20_000

_MEASURE = """
import asyncio, gc, json, sys, tracemalloc, types
from zymi_tui.events.chain_split import LaterPart
from zymi_tui.events.sqlite_read import SqliteReader

async def read(db):
    reader = await SqliteReader.open(db)
    try:
        return await reader.stream_heads()
    finally:
        await reader.close()

heads = asyncio.run(read(sys.argv[1]))
part = LaterPart.__new__(LaterPart)  # (no process: its stdin is a file, a BufferedWriter as the pipe's is)
with open(sys.argv[2], "wb") as sent:
    part.proc = types.SimpleNamespace(stdin=sent)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    part._send(heads)
    peak = tracemalloc.get_traced_memory()[1] - start
    tracemalloc.stop()
print(json.dumps({"peak": peak}))
"""


def _many_heads(tmp_path: Path) -> Path:
    db = copy_store(oracle_db("memory"), tmp_path)
    con = sqlite3.connect(db)
    with con:
        con.executemany(
            "INSERT INTO stream_heads VALUES (?, ?, ?)",
            (
                (
                    f"split-{n:06d}-0000-4000-8000-000000000000:step:work",
                    n % 97 + 1,
                    f"v2:{hashlib.sha256(b'%d' % n).hexdigest()}",
                )
                for n in range(HEADS)
            ),
        )
        # two heads zymi does not write so (kept as read, beside the packed ones)
        con.execute("INSERT INTO stream_heads VALUES ('split-odd-hash', 3, 'v2:NOT-HEX')")
        con.execute("INSERT INTO stream_heads VALUES ('split-odd-seq', 'seven', 'v2:' || lower(hex(zeroblob(32))))")
    con.close()
    return db


def test_the_heads_are_sent_to_the_later_part_without_copies(tmp_path: Path) -> None:
    """On main (the arrays copied into bytes for the pickle), a peak of 43.6 B a head while sending; here 3.6 B
    (the pickler's frames)."""
    db, sent = _many_heads(tmp_path), tmp_path / "sent.pickle"
    run = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(db), str(sent)], capture_output=True, text=True, timeout=300, check=True
    )
    peak = json.loads(run.stdout)["peak"]
    with sent.open("rb") as f:
        got = pickle.load(f)
    con = sqlite3.connect(db)
    expected = con.execute("SELECT stream_id, last_sequence, last_hash FROM stream_heads").fetchall()
    con.close()
    assert len(expected) > HEADS
    assert list(got) == [s for s, _, _ in expected]  # (the places: the order both parts hold the heads in)
    assert [(s, *got[s]) for s in got] == expected
    assert peak / len(expected) < 12, f"{peak / len(expected):.1f} B a head at the peak"
