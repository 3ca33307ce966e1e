"""The plot's calls in columns: each call as the store has it (checked against SQL), a few numbers a call
held (a `CallPoint` object a call held ~330 bytes; with the workflow events kept, 390 -> 105 bytes a call),
and values a hostile store may hold kept whole."""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
from pathlib import Path

from benchmarks.make_long_run import write_clones
from zymi_tui.tui.state.call_columns import CallColumns, CallPoint
from zymi_tui.tui.state.plot import CallCollector


def _rows(db: Path) -> list[tuple[int, str, int, str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return list(c.execute("SELECT id, stream_id, sequence, data FROM events ORDER BY id"))


def _collected_bytes(rows: list[tuple[int, str, int, str]]) -> tuple[int, CallCollector]:
    collector = CallCollector(window=10)
    tracemalloc.start()
    try:
        for i in range(0, len(rows), 500):
            assert collector.feed_rows(rows[i : i + 500]) == []
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return held, collector


def test_a_long_runs_calls_hold_under_150_bytes_each(tmp_path: Path) -> None:
    small, big = tmp_path / "small.db", tmp_path / "big.db"
    write_clones(small, 3000)
    write_clones(big, 15000)
    (held_small, _), (held_big, collector) = _collected_bytes(_rows(small)), _collected_bytes(_rows(big))
    calls = sum(len(sc.calls) for sc in collector.steps.values())
    with sqlite3.connect(big) as c:
        started = c.execute(
            "SELECT COUNT(*) FROM events WHERE kind_tag = 'llm_call_started' AND data NOT LIKE '%\"iteration\":0,%'"
        ).fetchone()[0]
    assert calls == started > 1500
    small_calls = sum(len(sc.calls) for sc in _collected_bytes(_rows(small))[1].steps.values())
    per_call = (held_big - held_small) / (calls - small_calls)
    # the columns' 64 bytes, and the step workflow events the graph keeps whole (~40 bytes a call here)
    assert per_call < 150, f"{per_call:.0f} bytes a call"


def test_each_call_is_the_stores(tmp_path: Path) -> None:
    db = tmp_path / "long.db"
    write_clones(db, 3000)
    rows = _rows(db)
    _, collector = _collected_bytes(rows)
    expected: list[tuple[int, int, int, int, str, int, int | None]] = []
    pending: dict[str, int] = {}
    for gid, stream, seq, data in rows:  # the store read plainly: json, no code of the plot's
        kind = json.loads(data)["kind"]
        if kind["type"] == "LlmCallStarted" and kind["data"]["iteration"] > 0:
            d = kind["data"]
            expected.append((gid, d["approx_context_chars"], d["message_count"], d["iteration"], stream, seq, None))
            pending[stream] = len(expected) - 1
        elif kind["type"] == "LlmCallCompleted" and stream in pending:
            usage = kind["data"].get("usage")
            i = pending.pop(stream)
            expected[i] = (*expected[i][:6], usage["input_tokens"] if usage else None)
    got = [
        (c.global_id, c.chars, c.message_count, c.iteration, c.stream_id, c.sequence, c.input_tokens)
        for sc in collector.steps.values()
        for c in sc.calls
    ]
    assert sorted(got) == sorted(expected)
    for sc in collector.steps.values():
        assert [c.index for c in sc.calls] == list(range(1, len(sc.calls) + 1))
        last = sc.calls[-1]
        assert last in sc.calls and sc.calls.index_of(last.global_id) == last.index
        assert sc.calls[-2:] == [sc.calls[len(sc.calls) - 2], last]


def test_numbers_beyond_64_bits_are_kept_whole() -> None:
    calls = CallColumns()
    calls.append(1, 2**64 - 1, 3, 1, 10, "s", 0)
    calls.append(-(2**70), 5, 2**80, 2, 11, "s", 1)
    calls.set_tokens(1, 2**65)
    assert calls[0] == CallPoint(1, 1, 2**64 - 1, 3, 1, 10, "s", 0, 2**65)
    assert calls[1] == CallPoint(2, -(2**70), 5, 2**80, 2, 11, "s", 1, None)
    assert list(calls.copy()) == list(calls)
