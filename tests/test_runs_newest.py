"""The newest runs, read from the end of the store, are exactly those streams' runs of the whole list."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from benchmarks.make_long_run import write_clones
from tests.tui_support import make_app, settle
from tests.waiting import LIMIT, pilot_until
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.runs import list_runs, newest_runs
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.tui.app import DashboardApp, MainScreen
from zymi_tui.tui.dashboard import loaders
from zymi_tui.tui.model import RunKey
from zymi_tui.tui.source import first_runs
from zymi_tui.tui.target import Target
from zymi_tui.tui.widgets import RunsList

from .conftest import oracle_db

T = TypeVar("T")
STORES = ["memory", "chat_profile", "coding_default", "coding_compaction"]


def newest_request_streams(db: str, n: int) -> tuple[set[str], int]:
    """The streams of the newest `n` PipelineRequested rows and how many there are, by SQL (not by the package)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT stream_id FROM events WHERE kind_tag = 'pipeline_requested' ORDER BY id DESC LIMIT ?", (n,)
    ).fetchall()
    total = con.execute("SELECT COUNT(*) FROM events WHERE kind_tag = 'pipeline_requested'").fetchone()[0]
    con.close()
    return {s for (s,) in rows} if n else set(), total


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("turns", [True, False])
async def test_newest_runs_are_the_whole_lists_runs_of_those_streams(store: str, turns: bool) -> None:
    db = str(oracle_db(store))
    async with await SqliteReader.open(db) as reader:
        every = await list_runs(reader, turns=turns)
        for n in (1, 2, 3, 50):
            page, whole = await newest_runs(reader, n, turns=turns)
            streams, total = newest_request_streams(db, n)
            assert {s.stream_id for s in page} == streams
            assert page == [s for s in every if s.stream_id in streams]
            assert whole == (total <= n)
            if whole:
                assert page == every
        assert reader.problems == []


async def test_the_dashboard_lists_every_run_of_a_store_larger_than_its_first_page(tmp_path: Path) -> None:
    """150 runs (the first page holds 60): newest first, and End reaches the oldest once all are read."""
    db = tmp_path / "many.db"
    _, runs, _ = write_clones(db, 150 * 60, "memory", many=True)
    assert runs == 150
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        runs_list = main.query_one(RunsList)
        await pilot_until(pilot, lambda: runs_list.border_title == "Runs (150)", "every run listed")
        assert main.selected == RunKey("run-149")
        await pilot.press("end")
        await pilot_until(pilot, lambda: main.selected == RunKey("run-0"), "the oldest run selected")
        await pilot.press("home")
        await pilot_until(pilot, lambda: main.selected == RunKey("run-149"), "the newest run selected again")


async def test_the_first_frame_lists_the_runs_read_before_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`observe` reads the newest runs before the dashboard starts: they are listed (and the newest selected)
    while the dashboard's own reads of the runs are held back; once the whole list arrives the cursor keeps
    its run."""
    db = tmp_path / "many.db"
    write_clones(db, 150 * 60, "memory", many=True)
    async with await SqliteReader.open(db) as reader:
        first = await first_runs(reader)
    assert (len(first.summaries), first.whole) == (60, False)

    release = threading.Event()

    def held(real: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        async def wait_then_read(*args: Any, **kwargs: Any) -> T:
            await asyncio.to_thread(release.wait, LIMIT)
            return await real(*args, **kwargs)

        return wait_then_read

    monkeypatch.setattr(loaders, "newest_runs", held(newest_runs))
    monkeypatch.setattr(loaders, "list_runs", held(list_runs))
    app = DashboardApp(Target(SqliteStore(db)), theme="textual-dark", first=first)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen), "the dashboard")
            runs_list = app.main.query_one(RunsList)
            await pilot_until(pilot, lambda: app.main.selected == RunKey("run-149"), "the newest run selected")
            assert runs_list.border_title == "Runs (newest 60…)"
            await pilot.press("j")
            await pilot_until(pilot, lambda: app.main.selected == RunKey("run-148"), "the next run selected")
            release.set()
            await pilot_until(pilot, lambda: runs_list.border_title == "Runs (150)", "every run listed")
            assert app.main.selected == RunKey("run-148")
            await pilot.press("end")
            await pilot_until(pilot, lambda: app.main.selected == RunKey("run-0"), "the oldest run selected")
    finally:
        release.set()
