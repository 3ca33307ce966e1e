"""The dashboard's long-run structures held densely (issue 34: the dashboard at a million events in 100 MB):
the run's index in narrow columns, the laid-out list without a copy of its ids, the plot's calls in narrow
columns, and the graph's node states instead of the workflow events. Traced bytes held per event against a
bound main exceeds (main's figure in each test), the contents checked against values built another way."""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from zymi_tui.events.run_index import RunIndex
from zymi_tui.tui.state.call_columns import CallColumns, CallPoint
from zymi_tui.tui.state.events import EventsModel
from zymi_tui.tui.state.graph import build_graph
from zymi_tui.tui.state.plot import CallCollector

ORACLE = Path(__file__).parent / "oracle"
N = 100_000
T = TypeVar("T")
RUN, STEP = "long", "long:step:work"


def two_streams() -> list[tuple[int, str, int, str]]:
    """A run stream and its step's, interleaved as a long chat's are (runs of 1-5 rows), ids from 10**6."""
    rows, seqs, stream = [], {RUN: 0, STEP: 0}, RUN
    for i in range(N):
        if i % 5 in (0, 3):
            stream = STEP if stream == RUN else RUN
        seqs[stream] += 1
        rows.append((10**6 + 2 * i, stream, seqs[stream], ("llm_call_started", "tool_call_completed", "x")[i % 3]))
    return rows


def traced(build: Callable[[], T]) -> tuple[T, int]:
    """(what `build()` returns, the bytes it left allocated)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = build()
        return out, tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


def test_a_long_runs_index_holds_ten_bytes_an_event() -> None:
    """As `run_index` builds it (each stream's pages into a part, the parts merged by id), kinds set after."""
    want = two_streams()
    pages = {s: [(gid, seq) for gid, stream, seq, _ in want if stream == s] for s in (RUN, STEP)}
    kinds = {gid: tag for gid, _, _, tag in want}

    def build() -> RunIndex:
        parts = []
        for stream, rows in pages.items():
            part = RunIndex()
            for at in range(0, len(rows), 1000):
                part.add_page(stream, rows[at : at + 1000])
            parts.append(part)
        index = RunIndex.merged(parts)
        index.retag(lambda gid, _: kinds[gid])
        return index

    index, held = traced(build)
    assert list(index) == sorted(want)
    # ids and sequences 4 bytes, stream and kind a byte: 10; main's columns 8 + 8 + 4 + 4 = 24
    assert held / N < 12, f"{held / N:.1f} B an event"


def test_columns_widen_for_what_does_not_fit() -> None:
    """Ids and sequences past 2**31 (and one past 64 bits), more than 255 streams and kinds: rows as given."""
    rows = [(gid, f"s{gid % 300}", seq, f"k{gid % 260}") for gid, seq in zip(range(1, 600), range(5, 604), strict=True)]
    rows += [(2**31 + 5, "s1", 2**40, "k1"), (2**40, "s299", 2**70, "k259"), (2**41, "late", -(2**33), "")]
    index = RunIndex(rows)
    assert list(index) == rows
    merged = RunIndex.merged([RunIndex(rows[::2]), RunIndex(rows[1::2])])
    assert list(merged) == rows


def test_the_layout_holds_no_copy_of_the_ids() -> None:
    """A long run grouped by step: its items 4 bytes an event, where each id is found bisected in place."""
    rows = two_streams()
    index = RunIndex(rows)
    state = EventsModel()
    _, held = traced(lambda: state.set_index(index, []))
    run = [gid for gid, stream, *_ in rows if stream == RUN]
    step = [gid for gid, stream, *_ in rows if stream == STEP]
    # the items: a header, the run stream's rows; a header, the step's rows
    for k in (0, 1, len(run) // 2, len(run) - 1):
        assert state.layout.span_of(run[k]) == (1 + k, 1)
    for k in (0, 7, len(step) - 1):
        assert state.layout.span_of(step[k]) == (2 + len(run) + k, 1)
    assert state.layout.span_of(rows[5][0] + 1) is None  # no such id
    state.cursor_gid = step[3]
    state.move(1)
    assert state.cursor_gid == step[4]
    # main: the items 8 bytes an event and an array of their ids 8 more
    assert held / N < 6, f"{held / N:.1f} B an event"


def test_a_plotted_call_holds_under_40_bytes() -> None:
    def build() -> CallColumns:
        calls = CallColumns()
        for i in range(N):
            calls.append(1_796_227_619_966_825_269 + i * 10**6, 40_000 + i, i % 400, 1 + i % 50, 10**6 + 7 * i,
                         STEP, 3 * i)  # fmt: skip
            calls.set_tokens(i + 1, None if i % 4 == 0 else 9000 + i)
        return calls

    calls, held = traced(build)
    for i in (0, 1, N // 3, N - 1):
        assert calls[i] == CallPoint(i + 1, 1_796_227_619_966_825_269 + i * 10**6, 40_000 + i, i % 400, 1 + i % 50,
                                     10**6 + 7 * i, STEP, 3 * i, None if i % 4 == 0 else 9000 + i)  # fmt: skip
    # time and tokens 8 bytes, counts, id and sequence 4, the stream's number 1: 37; main's 8 columns of 8: 64
    assert held / N < 40, f"{held / N:.1f} B a call"


def test_the_collector_keeps_the_graphs_states_not_the_workflow_events() -> None:
    """A long run's workflow rows (each its own text, as stored) fed as the dashboard reads them: the graph's
    node statuses as the rows say, and none of the rows held (main kept each, decoded)."""
    with sqlite3.connect(ORACLE / "coding_default" / "events.db") as c:
        started, completed = (json.loads(c.execute("SELECT data FROM events WHERE kind_tag = ?", (tag,)).fetchone()[0])
                              for tag in ("workflow_node_started", "workflow_node_completed"))  # fmt: skip
    assert completed["kind"]["data"]["success"] is True

    def row(template: dict[str, Any], node: str, **data: object) -> str:
        event = json.loads(json.dumps(template))
        event["id"] = str(uuid.UUID(int=len(rows) + 1))
        event["kind"]["data"].update(node_id=node, **data)
        return json.dumps(event)

    rows: list[tuple[int, str, int, str]] = []
    for _ in range(3000):  # work ends ok, b fails each time, c never ends
        for node in ("work", "b", "c"):
            rows.append((len(rows) + 1, STEP, len(rows) + 1, row(started, node)))
            if node != "c":
                rows.append((len(rows) + 1, STEP, len(rows) + 1, row(completed, node, success=node == "work")))
    collector = CallCollector()
    bad, held = traced(lambda: collector.feed_rows(rows))
    assert not bad
    # main: each row's decoded event and its StoredEvent kept (the text shared with `rows`), ~450 B a row
    assert held / len(rows) < 8, f"{held / len(rows):.1f} B a row"
    graph = build_graph("main", None, "no project", collector.nodes, collector.steps)
    assert [(n.id, n.status) for n in graph.nodes] == [("work", "ok"), ("b", "failed"), ("c", "running")]


async def test_a_flat_list_fed_live_from_empty_finds_each_event() -> None:
    """Events appended to a new list not grouped by step (no layout made before): each is found where the
    list puts it, in id order."""
    from zymi_tui.events.runs import list_runs
    from zymi_tui.events.sqlite_read import SqliteReader

    async with await SqliteReader.open(ORACLE / "coding_default" / "events.db") as reader:
        run = (await list_runs(reader))[0].stream_id
        events = await reader.read_stream(run, include_steps=True)
    state = EventsModel(group_by_step=False)
    for at in range(0, len(events), 7):
        state.append(events[at : at + 7])
    gids = [se.global_id for se in events]
    assert gids == sorted(gids) and len(gids) > 20
    assert [state.layout.span_of(gid) for gid in gids] == [(k, 1) for k in range(len(gids))]
