"""Old Layer C items hidden by the fresh filter kept as columns (context/cold_items.py): what a long
chat stream's replay holds per item added, and what builds show of them.

The answer keys are not the builder's: tracemalloc's count of what the replay holds against SQLite's
own count of the Layer C rows replayed by then, and a builder given no text source (it keeps every item
as an object, as main's did) fed the same events."""

from __future__ import annotations

import gc
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks.make_long_run import write_clones
from tests.test_context_properties import MEMORY, PREFIX
from tests.test_context_text_source import KNOBS, LAYER_C_KINDS, _events, _shown, drop_everything, same_builds
from zymi_tui.context import event_items
from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.events.sqlite_read import SqliteReader

__all__ = ["drop_everything"]  # the fixture, imported for pytest

MARKS = (0.5, 1.0)  # where what the builder holds is measured: the middle of the stream, its end


async def _held_along(db: Path) -> list[tuple[int, int]]:
    """A long chat stream's step events fed to a replay's builder (a text source), each run of the chat
    tried without its fresh cutoff and then with it, as the replay infers Layer A: (tracemalloc's size
    of what the builder holds, the global id of the last event fed) at each of `MARKS`."""
    from zymi_tui.context.texts import StoreTexts

    events = [se for se in await _events(db) if ":step:" in se.stream_id]
    marks = {int(len(events) * m) - 1 for m in MARKS}
    out = []
    async with await SqliteReader.open(db) as reader:
        b = ContextBuilder(ContextKnobs(), PREFIX, texts=StoreTexts(reader.rows_at, events[0].stream_id))
        run = None
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            for i, se in enumerate(events):
                if se.correlation_id != run:  # a new run of the chat
                    run = se.correlation_id
                    b.set_prefix(PREFIX, None)
                    b.build(MEMORY, allow_compaction=False)
                    b.set_prefix(PREFIX, event_items.fast_ts_ns(se.timestamp))
                b.add(se)
                if i in marks:
                    b.build(MEMORY).entries  # noqa: B018  (what `replay` shows of a call)
                    gc.collect()
                    out.append((tracemalloc.get_traced_memory()[0] - base, se.global_id))
        finally:
            tracemalloc.stop()
    return out


def _layer_c_rows_upto(db: Path, global_id: int) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        marks = ",".join("?" * len(LAYER_C_KINDS))
        sql = f"SELECT count(*) FROM events WHERE stream_id LIKE '%:step:%' AND kind_tag IN ({marks}) AND id <= ?"
        (n,) = con.execute(sql, (*LAYER_C_KINDS, global_id)).fetchone()
    return int(n)


async def test_a_long_chat_streams_builder_grows_under_70_bytes_per_item(tmp_path: Path) -> None:
    """A 40k-event chat stream (a run a turn, each run fresh): from its middle to its end, its builder
    holds < 70 B more per Layer C item added (measured 49.4 B: columns, sequences, timestamps, events
    seen, the uncut tail's sums; main 173.6 B, most of it an `Item` object and its sequence's int)."""
    db = tmp_path / "long.db"
    write_clones(db, 40_000, "coding_default")
    (held_mid, gid_mid), (held_end, gid_end) = await _held_along(db)
    added = _layer_c_rows_upto(db, gid_end) - _layer_c_rows_upto(db, gid_mid)
    per_item = (held_end - held_mid) / added
    assert per_item < 70, f"held {held_mid} -> {held_end} bytes, {added} items added: {per_item:.1f} B per item"


async def _builds_of_runs(reader: SqliteReader, db: Path, texts: bool) -> list[Any]:
    """A chat stream's step events fed to a builder (a text source or none), each run tried without its
    fresh cutoff and then with it (as the replay infers Layer A), every old item made cold as soon as it
    may be; builds that show cold items (a window over everything, a forget's dropped list, a compaction's
    span, a rebuild without the fresh filter, a clone's), asked for only at the end."""
    from zymi_tui.context.texts import StoreTexts

    events = [se for se in await _events(db) if ":step:" in se.stream_id]
    source = StoreTexts(reader.rows_at, events[0].stream_id) if texts else None
    b = ContextBuilder(ContextKnobs(), PREFIX, texts=source)
    built, run = [], None
    for i, se in enumerate(events):
        if se.correlation_id != run:
            run = se.correlation_id
            b.set_prefix(PREFIX, None)
            built.append(b.build(MEMORY, allow_compaction=False))
            b.set_prefix(PREFIX, event_items.fast_ts_ns(se.timestamp))
        b.add(se)
        if i % 89 == 0 or i == len(events) - 1:
            built += [b.build(MEMORY, knobs=k) for k in KNOBS]
            built.append(b.build(MEMORY, allow_compaction=False, apply_fresh=False))
    assert (b._raw.cold > len(events) // 4) if texts else b._raw.cold == 0  # (made cold, or none without texts)
    other = b.clone()
    other.set_prefix(PREFIX, None)
    built += [other.build(MEMORY, knobs=k) for k in KNOBS]
    return [_shown(c) for c in built]


async def test_builds_showing_cold_items_equal_a_builder_that_keeps_them(drop_everything: None, tmp_path: Path) -> None:
    await same_builds(tmp_path, _builds_of_runs, 50)
