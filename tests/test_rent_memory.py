"""`rent` on one long run keeps a few machine integers per tool result, not an object each.

The answer keys are not `observation_rent`'s: SQLite's own count of the run's tool results (how many
observations the ledger must hold), tracemalloc's count of the bytes left alive once the replay is
over (what `rent` holds while it ranks), and every observation's figures recomputed here from each
call's message list (`_expected`, a plain walk written for this test)."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

from benchmarks.make_long_run import RUN, write_clones
from zymi_tui.events.messages import ToolResultMessage
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.rent import Rent, observation_rent
from zymi_tui.replay.store_replay import replay_store

STREAM = f"{RUN}:step:work"


def _tool_results(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        sql = "SELECT count(*) FROM events WHERE stream_id = ? AND kind_tag = 'tool_call_completed'"
        (n,) = con.execute(sql, (STREAM,)).fetchone()
    return int(n)


async def _rent(db: Path, *, traced: bool) -> tuple[Rent, int]:
    """The rent of the long run's step stream, and the bytes left alive by it once it returned."""
    async with await SqliteReader.open(db) as reader:

        def replay(knobs: dict[str, int | None] | None) -> AsyncIterator[CallContext]:
            return replay_store(reader, project=None, streams=[STREAM])

        gc.collect()
        if traced:
            tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        try:
            rent = await observation_rent(replay, STREAM)
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
    return rent, held


# Both runs in one fresh interpreter, the shorter first: its replay fills the bounded caches (timestamps,
# decoders) the longer one then finds filled, so the difference is what grows with the run. Run inside the
# suite, what earlier tests left alive moved the first figure (a CI run measured 122 B a result; alone, 61 B).
HELD = """
import asyncio, sys
from pathlib import Path
from tests.test_rent_memory import _rent
for db in sys.argv[1:]:
    rent, held = asyncio.run(_rent(Path(db), traced=True))
    print(len(rent.ranked()), held)
"""


async def test_rent_holds_under_120_bytes_per_tool_result(tmp_path: Path) -> None:
    """3x the run: what `rent` holds once the replay is over grows by < 120 B per tool result added.
    Its columns are 6 figures and a call id's end (8 B each), a tool's index (8 B) and the call id's
    UTF-8 (19 B here): 63 B measured. An object per result cannot fit:
    main's (a dataclass, its dict entry, its call id and tool strings) measured 336 B; a slotted object
    alone with its call id string is ~165 B."""
    dbs = [tmp_path / f"long_{events}.db" for events in (12_000, 36_000)]
    for db, events in zip(dbs, (12_000, 36_000), strict=True):
        write_clones(db, events, "coding_default")
    done = subprocess.run([sys.executable, "-c", HELD, *map(str, dbs)], capture_output=True, text=True, check=True)
    held, results = [], []
    for db, line in zip(dbs, done.stdout.splitlines(), strict=True):
        ranked, size = map(int, line.split())
        results.append(_tool_results(db))
        assert ranked > 0.9 * results[-1]  # (the ledger holds the stream's tool results)
        held.append(size)
    per_result = (held[1] - held[0]) / (results[1] - results[0])
    assert per_result < 120, f"held {held} bytes for {results} tool results: {per_result:.0f} B per result"


async def test_rent_figures_equal_a_plain_walk_of_every_call(tmp_path: Path) -> None:
    """Every observation's figures, and the ranking, equal a walk of each call's message list made
    here (a dict of per-result sums), on a run long enough that rows are found past the first page."""
    db = tmp_path / "long.db"
    write_clones(db, 6_000, "coding_default")
    rent, _ = await _rent(db, traced=False)
    async with await SqliteReader.open(db) as reader:
        expected: dict[int, list[int]] = {}
        async for c in replay_store(reader, project=None, streams=[STREAM]):
            r = c.rendered
            if c.stream_id != STREAM or r is None or c.is_compaction or c.hard_cap_failure or r.hard_cap_exceeded:
                continue
            for e in r.entries:
                if isinstance(e.message, ToolResultMessage) and e.source_seq is not None:
                    full_masked_rent = expected.setdefault(e.source_seq, [0, 0, 0])
                    if e.reason.startswith("masked"):
                        full_masked_rent[1] += 1
                    else:
                        full_masked_rent[0] += 1
                        full_masked_rent[2] += e.bytes
    got = {o.source_seq: [o.calls_full, o.calls_masked, o.rent_bytes] for o in rent.observations}
    assert got == expected
    ranked = [o.source_seq for o in rent.ranked()]
    assert ranked == sorted(expected, key=lambda s: (-expected[s][2], s))
    assert [o.source_seq for o in rent.ranked(5)] == ranked[:5]
    assert all(o.call_id.startswith("call_") and o.tool != "unknown" for o in rent.observations)
