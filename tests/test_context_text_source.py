"""A replay's builders drop old items' texts and read them back from the store when a build shows them
(context/texts.py): memory per item stays small, and what any build shows is unchanged.

The answer keys are not the dropping builder's: SQLite's own count of a long run's Layer C rows (what is
added), a builder given no text source (it keeps every text, as main's did) fed the same events, and the
real engine's recorded request bodies (test_context_long_memory, with every text dropped).
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.make_long_run import write_clones
from tests.conftest import ORACLE, copy_store
from tests.test_context_properties import MEMORY, PREFIX
from tests.test_postgres_helpers import pg_url
from zymi_tui.context import builder as builder_module
from zymi_tui.context import event_items, layer_c
from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.events.messages import to_wire
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import EventReader
from zymi_tui.replay.event_pages import replay_events
from zymi_tui.replay.store_replay import replay_store

__all__ = ["pg_url"]  # the fixture, imported for pytest

LAYER_C_KINDS = ("llm_call_completed", "tool_call_completed", "user_message_received")


def _layer_c_rows(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        marks = ",".join("?" * len(LAYER_C_KINDS))
        sql = f"SELECT count(*) FROM events WHERE stream_id LIKE '%:step:%' AND kind_tag IN ({marks})"
        (n,) = con.execute(sql, LAYER_C_KINDS).fetchone()
    return int(n)


async def _held_at_the_end(db: Path) -> int:
    """tracemalloc's current size as a whole-store replay makes its last rows (its builders alive): the
    least over its last 600 rows (the pages of rows in flight come and go)."""
    async with await SqliteReader.open(db) as reader:
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            held: list[int] = []
            async for row in replay_store(reader, project=None):
                if row.rendered is not None:
                    row.rendered.entries  # noqa: B018  (what `replay` shows of a call)
                held = [*held[-599:], tracemalloc.get_traced_memory()[0] - base]
        finally:
            tracemalloc.stop()
    return min(held)


async def growth_per_item(folder: Path, held_at_the_end: Callable[[Path], Awaitable[int]]) -> tuple[float, str]:
    """What `held_at_the_end` of a long run (16,000 events, then 3x as many: both hold full pages of rows
    in flight) grows by per Layer C row that SQLite counts; and the figures, said."""
    held, items = [], []
    for events in (16_000, 48_000):
        db = folder / f"long_{events}.db"
        write_clones(db, events, "coding_default")
        items.append(_layer_c_rows(db))
        held.append(await held_at_the_end(db))
    per_item = (held[1] - held[0]) / (items[1] - items[0])
    return per_item, f"held {held} bytes for {items} items: {per_item:.1f} B per item added"


async def test_a_long_runs_builder_holds_a_few_hundred_bytes_per_item(tmp_path: Path) -> None:
    """3x the run: what the replay holds grows by a few hundred bytes per Layer C item added (its
    figures: ~410 B, most of it the item's object and its int objects), not by the item's text (on
    main: ~2,240 B per item, every text kept)."""
    per_item, said = await growth_per_item(tmp_path, _held_at_the_end)
    assert per_item < 500, said


async def _events(db: Path) -> list[ReplayEvent]:
    async with await SqliteReader.open(db) as reader:
        return [se async for se in replay_events(reader, None)]


def _shown(ctx: Any) -> Any:
    return (
        ctx.chars, ctx.message_count, ctx.wire(), [to_wire(e.message) for e in ctx.dropped],
        [(e.reason, e.bytes, e.source_seq) for e in ctx.entries],
        ctx.compaction and ([to_wire(m) for m in ctx.compaction.request_messages], ctx.compaction.span_bytes),
    )  # fmt: skip


KNOBS = [
    ContextKnobs(),
    ContextKnobs(observation_window=100_000, soft_cap_chars=10**9, hard_cap_chars=10**9),  # nothing masked
    ContextKnobs(forget_after_turns=3),  # a dropped list of every older item, in full
    ContextKnobs(observation_window=2, soft_cap_chars=2_000, hard_cap_chars=10**9, min_tail_turns=1),  # a span
]


async def _builds_after_drops(reader: EventReader, db: Path, texts: bool) -> list[Any]:
    """One long step stream fed to a builder (a text source or none), every text dropped once 2 items
    old; then builds that show old items in full (a window over everything, a forget's dropped list, a
    compaction's span, a rebuild without the fresh filter), asked for only at the end."""
    from zymi_tui.context.texts import StoreTexts  # (here: the memory test above also runs on main)

    events = [se for se in await _events(db) if ":step:" in se.stream_id]
    stream = events[0].stream_id
    events = [se for se in events if se.stream_id == stream]
    source = StoreTexts(reader.rows_at, stream) if texts else None  # type: ignore[attr-defined]
    b = ContextBuilder(ContextKnobs(), PREFIX, texts=source)
    built = []
    for i, se in enumerate(events):
        b.add(se)
        if i == len(events) // 2:
            b.set_prefix(PREFIX, event_items.fast_ts_ns(se.timestamp))  # a fresh run starts here
        if i % 97 == 0 or i == len(events) - 1:
            built += [b.build(MEMORY, knobs=k) for k in KNOBS]
            built.append(b.build(MEMORY, allow_compaction=False, apply_fresh=False))
    dropped = sum(1 for r in b.tail.items if r._message is None)
    assert texts == (dropped > 0)
    return [_shown(c) for c in built]


@pytest.fixture
def drop_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builder_module, "HOT_ITEMS", 2)
    monkeypatch.setattr(layer_c, "DROP_MIN_BYTES", 0)


async def test_builds_showing_dropped_texts_equal_a_builder_that_keeps_them(
    drop_everything: None, tmp_path: Path
) -> None:
    await same_builds(tmp_path, _builds_after_drops, 20)


async def same_builds(tmp_path: Path, builds: Callable[[Any, Path, bool], Awaitable[list[Any]]], least: int) -> None:
    """`builds` of a long run with a text source equal those without one (more than `least` of them)."""
    db = tmp_path / "long.db"
    write_clones(db, 1_500, "coding_default")
    async with await SqliteReader.open(db) as reader:
        kept = await builds(reader, db, False)
        read_back = await builds(reader, db, True)
    assert len(kept) == len(read_back) > least
    for i, (a, b) in enumerate(zip(kept, read_back, strict=True)):
        assert a == b, f"build {i}"


async def test_postgres_reads_dropped_texts_back(drop_everything: None, pg_url: str, tmp_path: Path) -> None:
    """The same builds on a Postgres copy of the store (`migrate`), texts read back through its reader."""
    from zymi_tui.commands.migrate_cmds import migrate
    from zymi_tui.events.postgres_read import PostgresReader

    db = tmp_path / "long.db"
    write_clones(db, 600, "coding_default")
    await migrate(str(db), pg_url, 500)
    async with await SqliteReader.open(db) as reader:
        kept = await _builds_after_drops(reader, db, texts=False)
    pg = await PostgresReader.open(pg_url)
    try:
        read_back = await _builds_after_drops(pg, db, texts=True)
    finally:
        await pg.close()
    assert kept == read_back


async def test_a_replay_shown_after_its_reader_closed_reads_texts_again(
    drop_everything: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows kept past the replay (a screen, a test) still show their old texts: the oracle run whose
    bodies are longest, replayed with every text dropped, then shown after the reader closed, equals the
    same replay with no text dropped."""
    db = copy_store(ORACLE / "coding_compaction" / "events.db", tmp_path / "s")
    project = ORACLE / "coding_compaction" / "project"
    reader = await SqliteReader.open(db)
    try:
        rows = [row async for row in replay_store(reader, project=project)]
    finally:
        await reader.close()
    shown = [_shown(r.rendered) for r in rows if r.rendered is not None and r.rendered.shape is not None]
    assert any(r._message is None for row in rows if row.rendered and row.rendered.shape
               for r in row.rendered.shape.tail.items)  # fmt: skip
    monkeypatch.setattr(builder_module, "HOT_ITEMS", 10**9)
    reader = await SqliteReader.open(db)
    try:
        rows = [row async for row in replay_store(reader, project=project)]
        kept = [_shown(r.rendered) for r in rows if r.rendered is not None and r.rendered.shape is not None]
    finally:
        await reader.close()
    assert shown == kept
