"""`advise` replays its candidates in its own process unless `--workers` asks for a pool, whatever the
store's size (at 1M events one worker was measured cheaper in CPU and in wall time than the pool:
advice/run.py ADVISE_WORKERS). The pool's size threshold is lowered here so that an oracle store is
past it, and the machine is given two usable cores."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

import zymi_tui.replay.advice.run as advice_run
import zymi_tui.replay.sweep_pool as sweep_pool
import zymi_tui.replay.whatifs as whatifs
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.advice import advise, to_json

from .conftest import ORACLE

SCENARIO = ORACLE / "coding_default"


def _advise(tmp: Path, workers: int | None) -> tuple[list[int], Any]:
    """How many workers the pool was started with (one entry per start), and the advice."""
    db = tmp / "events.db"
    if not db.exists():
        shutil.copy(SCENARIO / "events.db", db)
    pools: list[int] = []
    real = sweep_pool.replay_on_pool

    async def on_pool(*args: Any, **kw: Any) -> Any:
        pools.append(kw["workers"])
        return await real(*args, **kw)

    async def main() -> Any:
        async with await SqliteReader.open(db) as reader:
            return await advise(reader, SCENARIO / "project", location=SqliteStore(db), workers=workers)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("zymi_tui.replay.advice.run.replay_on_pool", on_pool)
        mp.setattr(advice_run, "WHATIF_POOL_MIN_EVENTS", 1)
        mp.setattr(whatifs, "usable_cores", lambda: 2)
        advice = asyncio.run(main())
    return pools, advice


def test_by_default_the_candidates_are_replayed_in_this_process(tmp_path: Path) -> None:
    pools, advice = _advise(tmp_path, None)
    assert advice.tried > 0  # there were candidates to replay
    assert pools == []


def test_workers_asked_for_start_the_pool_with_the_same_advice(tmp_path: Path) -> None:
    pools, pooled = _advise(tmp_path, 2)
    _, alone = _advise(tmp_path, 1)
    assert pools == [2]
    assert to_json(pooled) == to_json(alone)
