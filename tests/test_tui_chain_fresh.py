"""The dashboard's hash-chain verdict follows the store: a check that the store has since outgrown
is not shown as current, and a row changed in place after the check (which the tail, reading only
new rows, never sees) turns the banner red once the store is checked again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.tui_support import append_copy_of_run, make_app, scenario_copy, settle
from tests.waiting import pilot_until
from zymi_tui.tui.app import MainScreen


def banner(main: MainScreen) -> str:
    return str(main.query_one("#banner").render())


def run_info(main: MainScreen) -> str:
    return str(main.query_one("#run-info").render())


async def test_a_row_changed_after_the_check_turns_the_banner_red(tmp_path: Path) -> None:
    db = scenario_copy("memory", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot_until(pilot, lambda: "stream(s) verified" in banner(main), "the first check")
        assert "chain ✓" in run_info(main)
        con = sqlite3.connect(db)
        con.execute('UPDATE events SET data = replace(data, \'"source":"\', \'"source":"x\') WHERE id = 7')
        con.commit()
        con.close()
        await pilot_until(pilot, lambda: "fail the hash-chain check" in banner(main), "the check run again", limit=60)
        assert "stream(s) verified" not in banner(main)


async def test_new_events_after_the_check_make_it_stale_until_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = scenario_copy("memory", tmp_path)
    app = make_app(db)
    monkeypatch.setattr("zymi_tui.tui.chain_freshness.RECHECK_S", 3600.0)  # no second check in this test
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot_until(pilot, lambda: "3 stream(s) verified" in banner(main), "the first check")
        await append_copy_of_run(db)
        await pilot_until(pilot, lambda: "the store changed since 3 stream(s)" in banner(main), "the stale verdict")
        assert "chain ✓" not in run_info(main)
        monkeypatch.setattr("zymi_tui.tui.chain_freshness.RECHECK_S", 0.0)
        await pilot_until(pilot, lambda: "6 stream(s) verified" in banner(main), "the store checked again")
        assert "changed since" not in banner(main)


async def test_a_store_sqlite_finds_damaged_is_said_so_in_the_banner(tmp_path: Path) -> None:
    from tests.test_verify_table import concurrent_writers

    db = tmp_path / "events.db"
    concurrent_writers(db)
    app = make_app(db)
    async with app.run_test(size=(160, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot_until(pilot, lambda: "the store is damaged" in banner(main), "the damage in the banner", limit=60)
        assert "Rowid 203 out of order" in banner(main)
        assert "stream(s) verified" not in banner(main) and "chain ✓" not in run_info(main)


async def test_rows_the_check_saw_are_no_change_when_the_tail_reads_them(tmp_path: Path) -> None:
    """The tail starts after the rows the first runs were drawn from; rows written before the check began
    are in the check, and the tail reading them is not a change (the banner said "the store changed since
    2 stream(s) were verified: checking again…" and checked an unchanged store again, as `observe` did on
    every long run of benchmarks/make_long_run.py)."""
    from dataclasses import replace

    from benchmarks.make_long_run import write_clones
    from tests.test_dash_first_runs_let_go import EVENTS, app_with_first_runs

    db = tmp_path / "events.db"
    write_clones(db, EVENTS)
    with sqlite3.connect(db) as con:
        (top,) = con.execute("SELECT MAX(id) FROM events").fetchone()
    app = await app_with_first_runs(db)
    assert app.first is not None
    app.first = replace(app.first, last_global_id=top - 500)  # (as if drawn before the last 500 rows came)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot_until(pilot, lambda: "stream(s) verified" in banner(main), "the first check")
        await pilot_until(pilot, lambda: main.last_gid == top, "the tail at the store's last row")
        main._recheck_chains_if_changed()  # (what the once-a-second stat does)
        assert not main.chain_freshness.stale
        await pilot.pause()
        assert "stream(s) verified" in banner(main) and "changed since" not in banner(main)


def test_a_tail_behind_the_checked_row_is_no_change_and_past_it_is() -> None:
    from zymi_tui.tui.chain_freshness import ChainFreshness

    fresh = ChainFreshness()
    fresh.landed((10, 20, 0, 30, 1000), [], 0.1)
    fresh.recheck_now((10, 20, 0, 30, 400))
    assert not fresh.stale
    fresh.recheck_now((10, 20, 0, 30, 1001))
    assert fresh.stale
    fresh.landed((10, 20, 0, 30, 1000), [], 0.1)
    fresh.recheck_now((10, 20, 0, 31, 1000))  # (the -wal's time moved: a commit)
    assert fresh.stale


async def test_a_check_in_a_thread_reads_the_last_id_on_its_own_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check's stamp ends with the store's last id as the check began, read on the reader the check reads
    the rows with: the check opens one reader, not a second one for that id alone."""
    from textual.worker import get_current_worker

    from tests.tui_support import sql
    from zymi_tui.tui import store_job

    opened: list[str] = []
    real = store_job.open_reader

    async def counted(store: object) -> object:
        opened.append(get_current_worker().group)
        return await real(store)  # type: ignore[arg-type]

    monkeypatch.setattr(store_job, "open_reader", counted)
    db = scenario_copy("memory", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot_until(pilot, lambda: "3 stream(s) verified" in banner(main), "the first check")
        assert opened.count("verify") == 1, opened
        checked = main.chain_freshness.checked
        assert checked is not None and checked[-1] == sql(db, "SELECT MAX(id) FROM events")[0][0]
