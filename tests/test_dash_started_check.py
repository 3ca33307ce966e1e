"""A large store's first hash-chain check starts with `observe`'s process, before the screen's modules load
(`start_check`), and the screen waits for that check instead of starting one after its first frame; while it
runs, a long run's index, kinds and plot (CPU the check needs on two cores) wait for its verdict, and the events
list shows the run's newest page meanwhile (issue 34: "verified" at a million events). Driven at 80x24 and
120x40, against SQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import copy_store, long_run_store, oracle_db
from tests.test_dash_first_check import held_check
from tests.tui_support import make_app, settle, sql
from tests.waiting import pilot_until
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import EventReader
from zymi_tui.events.verify_process import CheckProcess
from zymi_tui.tui.app import DashboardApp
from zymi_tui.tui.chain_freshness import start_check
from zymi_tui.tui.model import RunKey
from zymi_tui.tui.source import read_peaks as real_peaks
from zymi_tui.tui.state.run_index import RunIndex
from zymi_tui.tui.target import Target

NEWEST_PAGE = 200  # the events a long run shows at once (loaders.FIRST_PAGE), written here, not imported


def sql_streams(db: Path) -> int:
    """The streams a whole-store check names: those with rows and those only `stream_heads` knows."""
    rows = sql(db, "SELECT count(*) FROM (SELECT stream_id FROM events UNION SELECT stream_id FROM stream_heads)")
    return int(rows[0][0])  # type: ignore[call-overload]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_check_started_with_the_process_gives_the_first_verdict(
    size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("zymi_tui.tui.chain_freshness.OWN_PROCESS_BYTES", 0)  # checked by a process
    made: list[CheckProcess] = []
    real_init = CheckProcess.__init__

    def counted(self: CheckProcess, path: Path) -> None:
        made.append(self)
        real_init(self, path)

    monkeypatch.setattr(CheckProcess, "__init__", counted)
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    started = start_check(SqliteStore(db))
    assert started is not None and made == [started.process]  # before any app exists
    app = DashboardApp(Target(SqliteStore(db)), theme="textual-dark", check=started)
    async with app.run_test(size=size) as pilot:
        main = await settle(app, pilot)
        verified = f"{sql_streams(db)} stream(s) verified"
        await pilot_until(pilot, lambda: verified in str(main.query_one("#banner").render()), verified, limit=60)
        assert made == [started.process]  # the screen waited for that check, and started none of its own
        assert started.process.proc.returncode == 0


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_long_runs_index_kinds_and_plot_wait_for_the_first_check(
    size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest events are drawn at once; the run's index (1.45 s of CPU at a million events), its kinds and
    its plot's calls are read once the check's verdict is in."""
    monkeypatch.setenv("ZYMI_TUI_SPARSE_EVENTS", "1000")
    release = held_check(monkeypatch)
    kinds_asked: list[int] = []
    indexes_read: list[str] = []
    real_kinds, real_index = SqliteReader.kinds_of, SqliteReader.run_index

    async def kinds_of(self: SqliteReader, ids: list[int]) -> dict[int, str]:
        kinds_asked.append(len(ids))
        return await real_kinds(self, ids)

    reading: list[tuple[str, float, float]] = []  # (what, began, ended): the index's and the peaks' reads

    async def run_index(self: SqliteReader, stream_id: str) -> RunIndex:
        indexes_read.append(stream_id)
        began = time.monotonic()
        await asyncio.sleep(0.5)  # (a read of a million events' index: long enough for another read to overlap)
        got = await real_index(self, stream_id)
        reading.append(("index", began, time.monotonic()))
        return got

    async def peaks(reader: EventReader, turn_of: dict[str, str]) -> AsyncIterator[dict[RunKey, int]]:
        began = time.monotonic()
        await asyncio.sleep(0.5)
        async for got in real_peaks(reader, turn_of):
            yield got
        reading.append(("peaks", began, time.monotonic()))

    monkeypatch.setattr(SqliteReader, "kinds_of", kinds_of)
    monkeypatch.setattr(SqliteReader, "run_index", run_index)
    monkeypatch.setattr("zymi_tui.tui.dashboard.loaders.read_peaks", peaks)
    db = long_run_store(tmp_path, 3000)
    events = int(sql(db, "SELECT count(*) FROM events")[0][0])  # type: ignore[call-overload]
    newest = [r[0] for r in sql(db, f"SELECT id FROM events ORDER BY id DESC LIMIT {NEWEST_PAGE}")][::-1]
    app = make_app(db)
    try:
        async with app.run_test(size=size) as pilot:
            await pilot_until(pilot, lambda: bool(app.main.events.rows), "the run's newest events", limit=60)
            main = app.main
            banner = lambda: str(main.query_one("#banner").render())  # noqa: E731
            await pilot.pause(1.0)  # the index of 3,000 ids takes milliseconds: it would be read by now
            assert [row[0] for row in main.events.rows] == newest  # by SQL: the run's newest page, drawn
            assert not main.events.sparse
            assert "verified" not in banner()
            assert indexes_read == []
            assert kinds_asked == []
            assert main.calls is None  # no page of the run's calls read for the plot
            release.set()
            verified = f"{sql_streams(db)} stream(s) verified"
            await pilot_until(pilot, lambda: verified in banner(), verified, limit=60)
            await pilot_until(pilot, lambda: main.events.sparse and len(main.events.rows) == events, "the run's index")
            await pilot_until(pilot, lambda: not main.events.kinds_pending, "the kinds", limit=60)
            await pilot_until(pilot, lambda: main.calls_done, "the plot's calls", limit=60)
            calls = sql(db, "SELECT count(*) FROM events WHERE kind_tag = 'llm_call_started'")[0][0]
            assert main.calls is not None and sum(len(s.calls) for s in main.calls.steps.values()) == calls
            assert len(indexes_read) == 1
            await pilot_until(pilot, lambda: len(reading) == 2, "the peaks read", limit=60)
            (_, _, first_ended), (_, second_began, _) = sorted(reading, key=lambda r: r[1])
            assert first_ended <= second_began, f"the index and the peaks read at once: {reading}"  # one heap at a time
    finally:
        release.set()
