"""A long run's id index held in little memory: `run_ids` reads a stream a page at a time (the fetched rows
are not held beside the ids) and the dashboard's events list takes the kinds without a second copy of the
index. Traced bytes per event, on a stream of N events; the rows compared with SQLite's own unpaged read."""

from __future__ import annotations

import random
import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from zymi_tui.events import sqlite_runs as runs_side
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_schema import HASH_MIGRATION, SCHEMA
from zymi_tui.tui.state.events import EventsModel
from zymi_tui.tui.state.item_index import ItemIndex
from zymi_tui.tui.state.kind_codes import KindCodes
from zymi_tui.tui.state.run_index import Header, Items, RunIndex

N = 60_000


def long_stream(db: Path) -> None:
    """One run of N events (a repeated sequence at a page's edge, as a damaged store may hold), another
    stream's rows between them."""
    rows = [(f"e{i}", "long", i + 1, "llm_call_started" if i % 3 else "response_ready") for i in range(N)]
    rows.insert(1000, ("dup", "long", 1000, "response_ready"))
    rows[500:500] = [(f"o{i}", "other", i + 1, "response_ready") for i in range(50)]
    with sqlite3.connect(db) as c:
        c.executescript(SCHEMA)
        c.executescript(HASH_MIGRATION)
        c.executemany(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source) "
            "VALUES (?, ?, ?, '2026-01-01T00:00:00Z', ?, '{}', 'test')",
            rows,
        )


async def test_run_ids_pages_hold_no_second_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "events.db"
    long_stream(db)
    with sqlite3.connect(db) as c:
        want = c.execute("SELECT id, stream_id, sequence FROM events WHERE stream_id = 'long' ORDER BY id").fetchall()
    monkeypatch.setattr(runs_side, "ID_PAGE", 1000)  # the repeated sequence 1000 sits at an edge
    async with await SqliteReader.open(db) as reader:
        tracemalloc.start()
        try:
            ids = await reader.run_ids("long")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert ids == want and len(ids) == N + 1
    # an id row: its tuple (64 B), its place in the list (8) and two ints (~60); main also held the
    # fetched (id, sequence) rows beside them: 208 B an event
    assert peak / N < 160, f"{peak / N:.0f} B an event"


def test_kinds_taken_without_a_second_index() -> None:
    tracemalloc.start()  # from the start: what set_kinds frees counts too
    try:
        rows = [(gid, "long", gid - 10**6, "") for gid in range(10**6, 10**6 + N)]
        kinds = KindCodes([gid for gid, *_ in rows])
        kinds.add({gid: "llm_call_started" for gid, *_ in rows})
        state = EventsModel()
        state.set_index(RunIndex(rows), [], kinds=False)
        del rows
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        state.set_kinds(kinds)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert [row[3] for row in state.rows] == ["llm_call_started"] * N
    assert state.tag_of(state.rows[-1]) == "llm_call_started" and not state.kinds_pending
    # in place, the layout kept (no kind filter); main built a new index beside the old one, ~97 B
    assert peak / N < 50, f"{peak / N:.0f} B an event"


def test_kinds_taken_without_laying_the_list_out_again() -> None:
    """Without a kind filter the kinds change no row shown: the layout stands (main laid the whole list out
    again beside the old one, ~20 B an event at the peak: long_1m's dashboard peak RSS); under a filter chosen
    before the kinds came, the rows of that kind are shown once they come."""
    rows = [(gid, "long" if gid % 3 else "long/step:a", gid - 10**6, "") for gid in range(10**6, 10**6 + N)]
    kinds = KindCodes([gid for gid, *_ in rows])
    kinds.add({gid: "llm_call_started" if gid % 2 else "tool_call_completed" for gid, *_ in rows})
    plain, filtered = EventsModel(), EventsModel(kinds={"tool_call_completed"})
    for state in (plain, filtered):
        state.set_index(RunIndex(rows), [], kinds=False)
    plain.cursor_gid = rows[7][0]
    where = [plain.layout.span_of(gid) for gid, *_ in rows[::997]]  # (each row's first line and height)
    assert filtered.layout.visible_count == 0  # (no row's kind known yet)
    tracemalloc.start()
    try:
        plain.set_kinds(kinds)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    filtered.set_kinds(kinds)
    assert [plain.tag_of(row) for row in plain.rows[:4]] == ["tool_call_completed", "llm_call_started"] * 2
    assert plain.layout.visible_count == N and plain.cursor_gid == rows[7][0]
    assert [plain.layout.span_of(gid) for gid, *_ in rows[::997]] == where and where[1] is not None
    assert filtered.layout.visible_count == N // 2 and filtered.kinds_pending is False
    assert peak / N < 2, f"{peak / N:.1f} B an event at the peak"


def test_item_index_finds_what_a_dict_finds() -> None:
    """Rows in id order and out of it (a live row older than the last; an index not in id order), groups,
    gaps: every id's place and every absent id as a dict of the same places says."""
    for ordered in (True, False):
        rng = random.Random(7)
        gids = sorted(rng.sample(range(5000), 1500))
        if not ordered:
            rng.shuffle(gids)  # a damaged store's index: bisecting it is not enough
        rows = RunIndex((gid, "s", k, "") for k, gid in enumerate(gids))
        items = Items(rows)
        index = ItemIndex(items)
        places: dict[int, int] = {}
        pos = 0
        for _ in range(40):
            for _ in range(rng.randint(0, 2)):  # a header (or none) between runs
                items.add_header(Header("", 0))
            run = sorted(range(pos, min(pos + rng.randint(0, 60), len(gids))))
            pos += len(run)
            if rng.random() < 0.3:
                rng.shuffle(run)
            start = len(items)
            for p in run:
                places.setdefault(gids[p], len(items))
                items.add_row(p)
            index.add_run(start, len(items))
        for _ in range(30):
            p = rng.randrange(len(gids))
            places.setdefault(gids[p], len(items))
            items.add_row(p)
            index.append(len(items) - 1)
        for gid in range(5001):
            assert index.get(gid) == places.get(gid), (ordered, gid)
            assert (gid in index) == (gid in places)
        assert index.gids() == sorted(gid for item in items if not isinstance(item, Header) for gid in item[:1])


def test_a_laid_out_long_run_costs_its_rows_not_a_dict_of_them() -> None:
    tracemalloc.start()
    try:
        rows = [(gid, "long", gid - 10**6, "llm_call_started") for gid in range(10**6, 10**6 + N)]
        index = RunIndex(rows)
        state = EventsModel()
        base = tracemalloc.get_traced_memory()[0]
        state.set_index(index, [])
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    state.cursor_gid = rows[100][0]
    assert state.cursor_row == rows[100] and state.layout.span_of(rows[-1][0]) == (N, 1)  # under its group's header
    # the layout: the items (8 B an event) and where each is (8 B an event); main's dict of them ~94 B
    assert held / N < 40, f"{held / N:.0f} B an event"


async def test_a_long_runs_index_is_held_in_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dashboard's way with a long run (its index, then its kinds, then the layout), through the real reader:
    no tuple a row while it is read (`run_index`: pages into columns), ~50 B an event held after, every row as
    SQL reads it. Main held a 4-tuple a row: 167 B an event held, 295 B at the peak (the run_ids rows)."""
    db = tmp_path / "events.db"
    long_stream(db)
    with sqlite3.connect(db) as c:
        want = c.execute(
            "SELECT id, stream_id, sequence, kind_tag FROM events WHERE stream_id = 'long' ORDER BY id"
        ).fetchall()
    monkeypatch.setattr(runs_side, "ID_PAGE", 1000)  # the repeated sequence 1000 sits at an edge
    async with await SqliteReader.open(db) as reader:
        assert [(gid, stream, seq) for gid, stream, seq, _ in want] == await reader.run_ids("long")
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            state = EventsModel()
            index = await reader.run_index("long")
            read_peak = tracemalloc.get_traced_memory()[1] - base
            state.set_index(index, [], kinds=False)
            gids = state.rows.gids()
            kinds = KindCodes(gids)
            kinds.add(await reader.kinds_of(list(gids)))
            del gids
            state.set_kinds(kinds)
            del kinds
            held = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
    assert list(state.rows) == want and len(want) == N + 1
    assert [state.tag_of(row) for row in state.rows] == [tag for *_, tag in want]
    assert state.layout.visible_count == N + 1
    state.cursor_gid = want[7][0]
    assert state.cursor_row == want[7]
    # the columns (gid 8, sequence 8, stream 4, kind 4), the items (8) and where each is (8): ~40 B
    assert held / N < 60, f"{held / N:.0f} B an event held"
    # while it is read: the columns and a page of (id, sequence) rows (main: every id row's tuple, ~200 B)
    assert read_peak / N < 60, f"{read_peak / N:.0f} B an event at the peak of the read"


async def test_run_index_is_run_ids_in_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run and its steps interleaved at random, a step whose sequence order is not its id order (a damaged
    store), a sequence stored as text, a repeated sequence at a page's edge: `run_index` gives the rows SQL
    gives, in id order, as `run_ids` does."""
    rng = random.Random(11)
    streams = ["r", "r:step:a", "r:step:b", "r:step:c", "other", "r2"]
    seqs = dict.fromkeys(streams, 0)
    rows = []
    for i in range(3000):
        stream = rng.choice(streams)
        seqs[stream] += 1
        seq: object = seqs[stream]
        if stream == "r:step:b":
            seq = 10_000 - seqs[stream]  # ids ascend while the sequences descend
        rows.append((f"e{i}", stream, seq))
    rows.insert(700, ("dup", "r", 50))
    rows.insert(900, ("text", "r:step:c", "7x"))
    db = tmp_path / "events.db"
    with sqlite3.connect(db) as c:
        c.executescript(SCHEMA)
        c.executescript(HASH_MIGRATION)
        c.executemany(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source) "
            "VALUES (?, ?, ?, '2026-01-01T00:00:00Z', 'response_ready', '{}', 'test')",
            rows,
        )
        want = c.execute(
            "SELECT id, stream_id, sequence FROM events WHERE stream_id = 'r' OR stream_id LIKE 'r:step:%' ORDER BY id"
        ).fetchall()
    monkeypatch.setattr(runs_side, "ID_PAGE", 50)
    async with await SqliteReader.open(db) as reader:
        index = await reader.run_index("r")
        assert [(gid, stream, seq) for gid, stream, seq, _ in index] == want == await reader.run_ids("r")
    assert {tag for *_, tag in index} == {""}
    assert index[-1] == (*want[-1], "") and index[3:5] == [(*row, "") for row in want[3:5]]
