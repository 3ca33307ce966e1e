"""What a whole-store replay holds that grows with one long run, by the line that allocated it (issue 34's
flat-memory rule: peak RSS at 1M events within 1.3x of at 100k).

    .venv/bin/python benchmarks/bench_held_growth.py SMALL LARGE [--top 25]

SMALL and LARGE are stores of one shape (`make_long_run.py` at two sizes, 100k events or more: on smaller ones
the pages of rows in flight when the snapshot is taken outweigh what grows). Each is replayed in this process,
SMALL first (so the bounded caches are filled when LARGE is measured), with tracemalloc on; a snapshot is
taken every eighth of the run's calls and the last one kept (its builders alive). Prints the difference,
LARGE minus SMALL, per Layer C item added: the items the builders alive hold in each last snapshot."""

from __future__ import annotations

import argparse
import asyncio
import gc
import sqlite3
import tracemalloc
from pathlib import Path

from zymi_tui.context.builder import ContextBuilder
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.store_replay import replay_store

FRAMES = 1  # the allocating line only (more frames make the snapshots slow on a million-event run)


def _calls(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        (n,) = con.execute("SELECT count(*) FROM events WHERE kind_tag = 'llm_call_started'").fetchone()
    return int(n)


def _items_alive() -> int:
    """The Layer C items the builders alive hold (an `Item` is not tracked by the collector: its builders are;
    counted, not walked: an old item kept as columns would be made again)."""
    builders = [o for o in gc.get_objects() if isinstance(o, ContextBuilder)]
    return sum(len(b._raw) for b in builders)


async def held(db: Path) -> tuple[tracemalloc.Snapshot, int]:
    """The last snapshot of a replay of `db` and the `Item`s alive when it was taken."""
    every = max(1, _calls(db) // 8)
    snapshot, items, rows = None, 0, 0
    async with await SqliteReader.open(db) as reader:
        tracemalloc.start(FRAMES)
        try:
            async for row in replay_store(reader, project=None):
                if row.rendered is not None:
                    row.rendered.entries  # noqa: B018  (what `replay` shows of a call)
                rows += 1
                if rows % every == 0:
                    snapshot = None  # (the last one freed before the next is taken)
                    snapshot, items = tracemalloc.take_snapshot(), _items_alive()
        finally:
            tracemalloc.stop()
    if snapshot is None:
        raise SystemExit(f"{db}: no calls replayed")
    return snapshot, items


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("small", type=Path)
    p.add_argument("large", type=Path)
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    small, small_items = asyncio.run(held(a.small))
    large, large_items = asyncio.run(held(a.large))
    added = large_items - small_items
    if added <= 0:
        raise SystemExit(f"no Layer C items added: {small_items} -> {large_items}")
    diff = large.compare_to(small, "lineno")
    total = sum(d.size_diff for d in diff)
    print(f"Items alive {small_items} -> {large_items}; held {total / added:.1f} B per item added")
    for d in diff[: a.top]:
        print(f"{d.size_diff / added:8.1f} B/item  {d.count_diff:+9d} blocks  {d.traceback[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
