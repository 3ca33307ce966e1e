"""What a long run's dashboard holds twice, measured (issue 34: the dashboard at a million events in 100 MB):

- the plot's calls handed to the screen while the collector still reads (every 20 pages) were a copy of every
  column, ~64 bytes a call (long_1m: 149,425 calls, ~10 MB a copy, two or three alive at once); now each
  step's calls so far are a fixed-length view of the collector's own columns;
- a run's index merged from its streams was built beside the streams' parts (~24 bytes an event twice); now
  the parts are cut as the merge takes them.

Each result is checked against rows this test made itself."""

from __future__ import annotations

import random
import tracemalloc

from zymi_tui.events.run_index import RunIndex
from zymi_tui.tui.state.call_columns import CallColumns
from zymi_tui.tui.state.plot import CallCollector, StepCalls

CALLS = 50_000
EVENTS = 400_000


def _fields(c: object) -> tuple[object, ...]:
    return tuple(getattr(c, f) for f in ("index", "ns", "chars", "message_count", "iteration", "global_id",
                                         "stream_id", "sequence", "input_tokens"))  # fmt: skip


def test_a_snapshot_of_the_collected_calls_shares_their_columns() -> None:
    rng = random.Random(3)
    made: list[tuple[object, ...]] = []
    calls = CallColumns()
    for i in range(CALLS):
        stream = f"run.s{i % 3}"
        ns, chars, gid = 10**9 * i + rng.randint(0, 999), rng.randint(1, 90_000), 7 * i + 1
        index = calls.append(ns, chars, 1 + i % 40, 1 + i % 9, gid, stream, 2 * i)
        tokens = None if i % 5 == 0 else rng.randint(10, 30_000)
        calls.set_tokens(index, tokens)
        made.append((index, ns, chars, 1 + i % 40, 1 + i % 9, gid, stream, 2 * i, tokens))
    collector = CallCollector()
    collector.steps = {"s": StepCalls("s", calls)}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        snap = collector.snapshot()
        per_call = (tracemalloc.get_traced_memory()[0] - before) / CALLS
    finally:
        tracemalloc.stop()
    assert per_call < 4, f"{per_call:.1f} bytes a call held by a snapshot (a copy: ~64)"
    for i in range(100):  # the collector reads on: the snapshot keeps its length
        calls.append(10**15 + i, 5, 1, 1, 10**9 + i, "run.s9", i)
    calls.set_tokens(CALLS + 1, 77)
    shot = snap.steps["s"].calls
    assert len(shot) == CALLS and [_fields(c) for c in shot] == made
    assert list(shot.ns) == [m[1] for m in made] and list(shot.chars) == [m[2] for m in made]
    assert shot[-1].global_id == made[-1][5] and shot.index_of(10**9) is None
    assert shot.index_of(made[123][5]) == 124
    assert shot.input_tokens() == [m[8] for m in made]
    assert len(calls) == CALLS + 100 and calls[-1].stream_id == "run.s9"


def _parts(rng: random.Random) -> tuple[list[RunIndex], list[tuple[int, str, int, str]]]:
    """A long run's two streams (a step's many events, the run stream's few among them) and their rows in id
    order, made here."""
    step, run = RunIndex(), RunIndex()
    rows = []
    for gid in range(1, EVENTS + 1):
        if gid % 5000 == 1:
            row = (gid, "run", gid // 5000, "workflow_node_started")
            run.append(row)
        else:
            row = (gid, "run.step", gid, "")
            step.append(row)
        rows.append(row)
    return [run, step], rows


def test_a_run_index_merged_from_its_streams_is_not_held_twice() -> None:
    tracemalloc.start()  # before the parts are made: a block made untraced is counted anew once it is resized
    try:
        parts, rows = _parts(random.Random(5))
        size = sum(len(p) for p in parts) * 24  # bytes of the columns (ids and sequences 8, stream and kind 4)
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        merged = RunIndex.merged(parts)
        extra = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    # beside the parts (which it may empty), at most half the index again: a merge beside them adds all of it
    assert extra < 0.5 * size, f"the merge added {extra / size:.2f}x the index at its peak"
    assert list(merged) == rows
