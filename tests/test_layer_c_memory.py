"""What a long run's Layer C costs per item: the `Item` object, and a whole replay's growth per item.

Measured by tracemalloc (bytes Python allocated, not a figure the code reports): the objects made for
N items, and what a whole-store replay holds at its end for two run lengths, per Layer C row that
SQLite counts in each store."""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from pathlib import Path

from benchmarks.make_long_run import write_clones
from tests.test_context_text_source import _held_at_the_end, _layer_c_rows, growth_per_item
from zymi_tui.context import seen
from zymi_tui.context.layer_c import OTHER, TOOL, Item, Tail
from zymi_tui.events.messages import ToolResultMessage
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.store_replay import replay_store

N = 20_000


def test_an_item_object_is_under_120_bytes() -> None:
    """N items sharing one message and small figures: what tracemalloc sees allocated is the objects
    alone. 10 slots of 8 B, the object's 16 B head and the collector's 16 B: 112 B (0e2a4f4's 13 slots
    measured 136 B); the threshold leaves 8 B for tracemalloc's own small allocations."""
    message = ToolResultMessage(tool_call_id="c", content="x")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        items = [Item(7, message, 100, TOOL) for _ in range(N)]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    per_item = (held - sys.getsizeof(items)) / N  # (less the list holding them)
    assert per_item < 120, f"{per_item:.1f} B per Item object"


async def test_a_long_runs_replay_grows_under_135_bytes_per_item(tmp_path: Path) -> None:
    """3x the run: what a replay holds at its end grows by < 135 B per Layer C item added (measured
    119.9 B; 0e2a4f4 168.4 B: its larger `Item`, 8-byte sequence arrays and an int object for each
    message size over 256)."""
    per_item, said = await growth_per_item(tmp_path, _held_at_the_end)
    assert per_item < 135, said


# Both stores replayed in one fresh interpreter, the shorter first (its replay fills the bounded caches the
# longer one then finds filled): the difference is what grows with the run, not what earlier tests left.
HELD = """
import asyncio, sys
from pathlib import Path
from tests.test_context_text_source import _held_at_the_end
for db in sys.argv[1:]:
    print(asyncio.run(_held_at_the_end(Path(db))))
"""


def test_a_long_runs_replay_grows_under_90_bytes_per_item(tmp_path: Path) -> None:
    """3x the run, measured in a fresh interpreter: < 90 B held per Layer C item added (measured 77.7 B;
    571b417 102.4 B). The builder's events seen are a byte of sequence step and four of clock step
    each (`SeenEvents`; two 8-byte integers before), its tails' turn bounds and running sums 4 bytes.
    Since old items are kept as columns (flat40) the longer run holds less at its end than the shorter:
    -90.0 B an item added at 165c3c3, -85 B at 11095fa (and -54.5 B from 48,000 to 96,000 events), so this
    now fails only for a change that holds ~180 B more an item (an `Item` object kept per item: 112 B)."""
    dbs = [tmp_path / f"long_{events}.db" for events in (16_000, 48_000)]
    for db, events in zip(dbs, (16_000, 48_000), strict=True):
        write_clones(db, events, "coding_default")
    done = subprocess.run([sys.executable, "-c", HELD, *map(str, dbs)], capture_output=True, text=True, check=True)
    held = [int(line) for line in done.stdout.splitlines()]
    items = [_layer_c_rows(db) for db in dbs]
    per_item = (held[1] - held[0]) / (items[1] - items[0])
    assert per_item < 90, f"held {held} bytes for {items} items: {per_item:.1f} B per item added"


async def _seen_held_at_the_end(db: Path) -> int:
    """What context/seen.py's lines allocated and still hold at a whole-store replay's last snapshot
    (one every 500 rows, its builders alive)."""
    kept = [tracemalloc.Filter(True, seen.__file__)]
    async with await SqliteReader.open(db) as reader:
        tracemalloc.start()
        try:
            held = 0
            rows = 0
            async for _ in replay_store(reader, project=None):
                rows += 1
                if rows % 500 == 0:
                    held = sum(t.size for t in tracemalloc.take_snapshot().filter_traces(kept).traces)
        finally:
            tracemalloc.stop()
    return held


async def test_a_long_runs_builder_holds_its_events_seen_in_under_4_bytes_per_item(tmp_path: Path) -> None:
    """3x the run: the events a replay's builder has seen grow by < 4 B per Layer C item added: those that
    made an item are counted, not kept (the item keeps its sequence and timestamp), the others ~6 B each
    (a chat stream sees ~0.5 of them an item: measured 3.2 B); 11095fa kept every event, 5 B each (8.2 B)."""
    per_item, said = await growth_per_item(tmp_path, _seen_held_at_the_end)
    assert per_item < 4, said


def test_a_tails_running_sums_pass_4_gb() -> None:
    """Running sums past what 4 bytes hold are kept whole, appended one by one or extended from
    another tail (a what-if following its base), against sums made here."""
    sizes = [2**31, 5, 2**31, 2**32 + 7, 3]
    items = [Item(i + 1, ToolResultMessage(tool_call_id="c", content="x"), n, OTHER) for i, n in enumerate(sizes)]
    base = Tail()
    for r in items:
        base.append(r)
    sums = [0]
    for n in sizes:
        sums.append(sums[-1] + n)
    assert list(base.cum_full) == sums
    assert list(base.cum_masked) == sums
    follower = Tail()
    follower.append(items[0])
    follower.extend(base, 1, len(items))
    assert list(follower.cum_full) == sums
    small = Tail()
    small.append(items[1])
    small.extend(base, 2, 4)
    assert list(small.cum_full) == [0, 5, 5 + 2**31, 5 + 2**31 + 2**32 + 7]
