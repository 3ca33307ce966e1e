"""A large store's first hash-chain check starts with `observe`'s process, before the screen's modules load
(`start_check`), and the screen waits for that check instead of starting one after its first frame; while it
runs, a long run's kinds and plot (CPU the check needs on two cores) wait for its verdict, and the events list
is drawn from the run's index meanwhile (issue 34: "verified" at a million events). Driven at 80x24 and
120x40, against SQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import copy_store, long_run_store, oracle_db
from tests.test_dash_first_check import held_check
from tests.tui_support import make_app, settle, sql
from tests.waiting import pilot_until
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.verify_process import CheckProcess
from zymi_tui.tui.app import DashboardApp
from zymi_tui.tui.chain_freshness import start_check
from zymi_tui.tui.target import Target


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
async def test_a_long_runs_kinds_and_plot_wait_for_the_first_check(
    size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZYMI_TUI_SPARSE_EVENTS", "1000")
    release = held_check(monkeypatch)
    kinds_asked: list[int] = []
    real_kinds = SqliteReader.kinds_of

    async def kinds_of(self: SqliteReader, ids: list[int]) -> dict[int, str]:
        kinds_asked.append(len(ids))
        return await real_kinds(self, ids)

    monkeypatch.setattr(SqliteReader, "kinds_of", kinds_of)
    db = long_run_store(tmp_path, 3000)
    events = int(sql(db, "SELECT count(*) FROM events")[0][0])  # type: ignore[call-overload]
    app = make_app(db)
    try:
        async with app.run_test(size=size) as pilot:
            main = await settle(app, pilot)
            banner = lambda: str(main.query_one("#banner").render())  # noqa: E731
            await pilot_until(pilot, lambda: main.events.sparse and len(main.events.rows) == events, "the run's index")
            await pilot.pause(1.0)  # the kinds of 3,000 ids take milliseconds: they would be read by now
            assert "verified" not in banner()
            assert kinds_asked == []
            assert main.calls is None  # no page of the run's calls read for the plot
            release.set()
            verified = f"{sql_streams(db)} stream(s) verified"
            await pilot_until(pilot, lambda: verified in banner(), verified, limit=60)
            await pilot_until(pilot, lambda: not main.events.kinds_pending, "the kinds", limit=60)
            await pilot_until(pilot, lambda: main.calls_done, "the plot's calls", limit=60)
            calls = sql(db, "SELECT count(*) FROM events WHERE kind_tag = 'llm_call_started'")[0][0]
            assert main.calls is not None and sum(len(s.calls) for s in main.calls.steps.values()) == calls
    finally:
        release.set()
