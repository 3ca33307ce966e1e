"""What the whole-store chain scan holds per stream: a store of many small runs has tens of thousands of
streams (50,000 on a million events), and the scan keeps each one's state until its verdict is made."""

from __future__ import annotations

import gc
import pickle
import sqlite3
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import msgspec

from zymi_tui.events.chain_heads import Heads
from zymi_tui.events.chain_split import PartResult, joined, part_result
from zymi_tui.events.hashchain import ChainScan, ScanRow, hash_v2
from zymi_tui.events.sqlite_read import SqliteReader

from .conftest import copy_store, oracle_db

STREAMS, ROWS = 4000, 3


def _chains() -> tuple[list[str], list[list[tuple[str, int, str, str, str]]]]:
    ids = [f"pipeline-main-{s:08d}-aaaa-bbbb-cccc-dddddddddddd:step:work" for s in range(STREAMS)]
    chains = []
    for s in range(STREAMS):
        prev, rows = "", []
        for seq in range(1, ROWS + 1):
            event_id, data = f"{s:030d}{seq:06d}", f'{{"n": {seq}}}'
            digest = hash_v2(event_id, seq, data, prev)
            rows.append((event_id, seq, data, prev, digest))
            prev = digest
        chains.append(rows)
    return ids, chains


def _fetched(ids: list[str], chains: list[list[tuple[str, int, str, str, str]]]) -> Iterator[list[ScanRow]]:
    """Each stream's rows as a fetch gives them: every column a new object (none shared with the heads)."""
    gid = 0
    for stream, rows in zip(ids, chains, strict=True):
        page: list[ScanRow] = []
        for event_id, seq, data, prev, digest in rows:
            gid += 1
            page.append((gid, event_id.encode(), stream.encode().decode(), seq, data.encode(), prev.encode().decode(),
                         digest.encode().decode()))  # fmt: skip
        yield page


def test_a_stream_at_its_head_holds_no_more_than_its_key() -> None:
    """Every stream ends at its head (as in every store zymi finished writing): what the scan holds for it
    beyond the heads is its key in one dict (~130 B), not also a (sequence, hash) of its own (~300 B)."""
    ids, chains = _chains()
    heads = Heads.of({s: (ROWS, rows[-1][4]) for s, rows in zip(ids, chains, strict=True)})  # (as `verify` reads them)
    gc.collect()
    tracemalloc.start()
    try:
        scan = ChainScan(heads)
        start = tracemalloc.get_traced_memory()[0]
        for page in _fetched(ids, chains):
            scan.feed(page)
        del page
        gc.collect()
        held = (tracemalloc.get_traced_memory()[0] - start) / STREAMS
    finally:
        tracemalloc.stop()
    assert held < 180, f"{held:.0f} B held per stream"
    verdicts = scan.verdicts()
    assert len(verdicts) == STREAMS and all(v.ok and v.verified == ROWS for v in verdicts.values())
    assert all(verdicts[s].last == heads[s] and verdicts[s].hash_at_head == heads[s][1] for s in ids)
    assert not scan.out_of_order


def _scanned() -> tuple[ChainScan, int]:
    """Every stream fed through a scan, each ending at its head; and the bytes the scan holds then (made and fed)."""
    ids, chains = _chains()
    heads = Heads.of({s: (ROWS, rows[-1][4]) for s, rows in zip(ids, chains, strict=True)})  # (as `verify` reads them)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        scan = ChainScan(heads)
        for page in _fetched(ids, chains):
            scan.feed(page)
        del page
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    return scan, held


def test_a_stream_is_kept_under_the_heads_own_key() -> None:
    """A stream's state is kept under the string the heads hold (not a second copy of its id from the first
    row fetched, ~110 B more a stream here): what the scan adds for it is one dict entry (~50 B with the table
    made for all the heads at once). On main, 135 B a stream; here 26 B."""
    scan, held = _scanned()
    assert held / STREAMS < 90, f"{held / STREAMS:.0f} B held per stream"
    assert all(v.ok and v.verified == ROWS for v in scan.verdicts().values())


def test_the_later_part_sends_a_stream_at_its_head_as_its_place() -> None:
    """What a split scan's later part sends back, once unpickled in the first process, per stream at its head:
    its place in the heads (4 B), not its whole verdict (a tuple with its id and hash, ~450 B). On main,
    457 B a stream; here 4 B."""
    scan, _ = _scanned()
    heads = scan.heads
    pickled = pickle.dumps(msgspec.structs.astuple(part_result(scan)), pickle.HIGHEST_PROTOCOL)
    gc.collect()
    tracemalloc.start()
    try:
        got = pickle.loads(pickled)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held / STREAMS < 40, f"{held / STREAMS:.0f} B a stream"
    # and the first process makes every verdict again, as the later part made it
    later = PartResult(*got)
    fresh = ChainScan(heads)
    made = joined(fresh, later).verdicts()
    assert sorted(made) == sorted(heads)
    assert all(v.ok and v.rows == v.verified == ROWS and v.last == heads[s] for s, v in made.items())
    assert all(v.hash_at_head == heads[s][1] for s, v in made.items())


async def test_the_heads_read_leaves_no_fetched_rows_behind(tmp_path: Path) -> None:
    """What reading the heads leaves held is the heads themselves: the rows fetched (a tuple each, 64 B) are not
    kept by aiosqlite's thread until its next call (for `verify`, after the whole scan). On main, 76 B a head
    more than the heads; here 4 B."""
    db = copy_store(oracle_db("memory"), tmp_path)
    con = sqlite3.connect(db)
    with con:
        con.executemany(
            "INSERT INTO stream_heads VALUES (?, ?, ?)",
            ((f"extra-{i:08d}-stream:step:work", i + 300, f"v2:{i:064x}") for i in range(STREAMS)),
        )
    con.close()
    reader = await SqliteReader.open(db)
    try:
        gc.collect()
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            heads = await reader.stream_heads()
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
    finally:
        await reader.close()
    own = sys.getsizeof(heads) + sum(
        sys.getsizeof(s) + sys.getsizeof(h) + sys.getsizeof(h[0]) + sys.getsizeof(h[1]) for s, h in heads.items()
    )
    assert len(heads) > STREAMS
    more = (held - own) / len(heads)
    assert more < 30, f"{more:.0f} B a head held besides the heads"
