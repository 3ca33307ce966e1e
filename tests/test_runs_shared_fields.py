"""The runs' summaries hold each repeated field once (issue 34: the dashboard at a million events in 100 MB).
A chat's turns repeat their stream id, pipeline, inputs and final output: summaries whose fields are equal
share one object, so a pickle (the dashboard's runs come from a child process) writes it once and its reader
makes it once. long_1m: 5,748 turns unpickled held 936 bytes a turn, now 401.

The distinct values come from SQLite and `json.loads`, not from the code under test; the bytes a turn may hold
are worked out from `sys.getsizeof` of what a turn cannot share (its summary, correlation id and numbers)."""

from __future__ import annotations

import gc
import json
import pickle
import sqlite3
import sys
import tracemalloc
from pathlib import Path

import pytest

from benchmarks.make_long_run import write_clones
from zymi_tui.events.runs import RunSummary, list_runs
from zymi_tui.events.sqlite_read import SqliteReader

EVENTS = 20_000


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("long") / "events.db"
    write_clones(db, EVENTS)
    return db


def sql_values(db: Path) -> dict[str, set[object]]:
    """The distinct values of each repeated field, read by SQLite and `json.loads`."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    requests = [json.loads(d) for (d,) in con.execute("SELECT data FROM events WHERE kind_tag = 'pipeline_requested'")]
    done = [json.loads(d) for (d,) in con.execute("SELECT data FROM events WHERE kind_tag = 'pipeline_completed'")]
    con.close()
    return {
        "stream_id": {r["stream_id"] for r in requests},
        "pipeline": {r["kind"]["data"]["pipeline"] for r in requests},
        "inputs": {json.dumps(r["kind"]["data"]["inputs"]) for r in requests},
        "final_output": {d["kind"]["data"]["final_output"] for d in done},
    }


async def turns_of(db: Path) -> list[RunSummary]:
    async with await SqliteReader.open(db) as reader:
        return await list_runs(reader, turns=True)


async def test_equal_fields_of_the_turns_are_one_object(long_store: Path) -> None:
    summaries = await turns_of(long_store)
    want = sql_values(long_store)
    assert len(summaries) > 50 and all(len(v) <= 2 for v in want.values())
    brought = pickle.loads(pickle.dumps(summaries))  # as the dashboard gets them from its child process
    assert brought == summaries
    for name, values in want.items():
        for where, runs in (("read", summaries), ("unpickled", brought)):
            objects = {id(v) for s in runs if (v := getattr(s, name)) is not None}  # (None: a turn not ended)
            assert len(objects) == len(values), f"{name} {where}: {len(objects)} objects, {len(values)} values"


async def test_a_pickled_turn_is_made_without_its_repeated_fields(long_store: Path) -> None:
    summaries = await turns_of(long_store)
    data = pickle.dumps(summaries)
    # what a turn cannot share: its summary, its correlation id and five numbers (started, duration, request id,
    # turn, turns) as the pickle's reader makes them, and its place in the list
    own = max(
        sys.getsizeof(s) + sys.getsizeof(s.correlation_id) + sys.getsizeof(2**62) + 4 * sys.getsizeof(2**20) + 8
        for s in summaries
    )
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        got = pickle.loads(data)
        gc.collect()  # (and the free lists emptied: the field tuples a frozen dataclass's unpickling made and freed)
        per_turn = (tracemalloc.get_traced_memory()[0] - before) / len(got)
    finally:
        tracemalloc.stop()
    assert got == summaries
    # the few distinct values shared by all the turns are ~1 KB in all: 64 bytes a turn of slack covers them
    assert per_turn < own + 64, f"{per_turn:.0f} bytes a turn (what it cannot share: {own})"
