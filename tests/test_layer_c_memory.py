"""What a long run's Layer C costs per item: the `Item` object, and a whole replay's growth per item.

Measured by tracemalloc (bytes Python allocated, not a figure the code reports): the objects made for
N items, and what a whole-store replay holds at its end for two run lengths, per Layer C row that
SQLite counts in each store."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

from benchmarks.make_long_run import write_clones
from tests.test_context_text_source import _held_at_the_end, _layer_c_rows
from zymi_tui.context.layer_c import TOOL, Item
from zymi_tui.events.messages import ToolResultMessage

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
    held, items = [], []
    for events in (16_000, 48_000):
        db = tmp_path / f"long_{events}.db"
        write_clones(db, events, "coding_default")
        items.append(_layer_c_rows(db))
        held.append(await _held_at_the_end(db))
    per_item = (held[1] - held[0]) / (items[1] - items[0])
    assert per_item < 135, f"held {held} bytes for {items} items: {per_item:.1f} B per item added"
