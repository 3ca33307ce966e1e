"""A whole-store replay holds the runs in progress, not every run it has passed: a run's inputs and
memory are dropped once the replay is past its run stream's last event (its steps keep what they
need), so memory stays flat however many runs the store holds (1M events of small runs: peak RSS
115 MB -> 84 MB, 70 MB at 99k; benchmarks/bench_cli.py --grid). The rows are the same: see
test_replay_streamed_table (the old table's words) and test_context_conformance."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from benchmarks.make_long_run import write_clones
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import location_of
from zymi_tui.replay import run_lifetimes
from zymi_tui.replay.store_replay import replay_store

RUNS = 150


def runs_held(db: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    """A replay of `db`: its rows, the runs it made, and the most of them alive at once."""
    made: list[weakref.ref[run_lifetimes._Run]] = []

    class Counted(run_lifetimes._Run):  # every run the replay makes, followed by a weak reference
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    monkeypatch.setattr(run_lifetimes, "_Run", Counted)
    most = 0

    async def go() -> int:
        nonlocal most
        reader = await open_reader(location_of(db))
        rows = 0
        try:
            async for _ in replay_store(reader, project=None):
                rows += 1
                if rows % 10 == 0:
                    gc.collect()
                most = max(most, sum(r() is not None for r in made))
        finally:
            await reader.close()
        return rows

    return asyncio.run(go()), len(made), most


def test_a_replay_holds_the_runs_in_progress_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "many.db"
    write_clones(db, RUNS * 60, "memory", many=True)
    rows, made, most = runs_held(db, monkeypatch)
    assert rows >= RUNS and made >= RUNS  # every run was made and its calls replayed
    assert most <= 3, f"{most} runs held at once (of {RUNS})"
