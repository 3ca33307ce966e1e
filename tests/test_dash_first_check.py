"""A large store's hash chains are checked by a process of their own from the first frame on (`verify_process`,
on two cores with its later half, `chain_split`): what the dashboard can do later (every run's peak, a scan of
the step starts for a foreign agent's spans) waits for that check's verdict, so "verified" is not held back by
a column that can wait (issue 34: "verified" at a million events). Once the verdict lands, they are read."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.test_runs_peaks import sql_peaks
from tests.tui_support import make_app, settle
from tests.waiting import pilot_until
from zymi_tui.events.store import EventReader
from zymi_tui.events.verify_process import ChainSummary, CheckProcess
from zymi_tui.tui.app import DashboardApp
from zymi_tui.tui.model import format_size
from zymi_tui.tui.source import store_from_spans

from .conftest import copy_store, oracle_db


def held_check(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Every store checked by a process, whose verdict lands when the returned event is set."""
    monkeypatch.setattr("zymi_tui.tui.chain_freshness.OWN_PROCESS_BYTES", 0)  # checked by a process
    release = threading.Event()
    real_result = CheckProcess.result

    def held(self: CheckProcess) -> ChainSummary:
        release.wait(60)  # the check's verdict lands when the test says so
        return real_result(self)

    monkeypatch.setattr(CheckProcess, "result", held)
    return release


def mounted(app: DashboardApp) -> bool:
    try:
        return app.main.reader is not None
    except LookupError:  # (its screen not mounted yet)
        return False


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_peaks_and_agent_steps_wait_for_the_first_check_by_a_process(
    size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = held_check(monkeypatch)
    spans_read: list[int] = []

    async def counted(reader: EventReader) -> bool:
        spans_read.append(1)
        return await store_from_spans(reader)

    monkeypatch.setattr("zymi_tui.tui.dashboard.selection.store_from_spans", counted)
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    expected = sql_peaks(str(db))  # by SQL, not by the package
    app = make_app(db)
    try:
        async with app.run_test(size=size) as pilot:
            # (not `settle`: the selected run, a chat stream of more than a page of events, has its newest page
            # drawn at once and is read whole, from its index, once the check's verdict is in)
            await pilot_until(pilot, lambda: mounted(app), "the dashboard")
            main = app.main

            def banner() -> str:
                return str(main.query_one("#banner").render())

            def info() -> str:
                return str(main.query_one("#run-info").render())

            await pilot_until(pilot, lambda: main.runs_complete, "every run listed")
            await pilot.pause(1.0)  # the peaks of 4 runs take milliseconds: they would be drawn by now
            assert "verified" not in banner()
            assert [row.peak_chars for row in main.runs.rows] == [None] * len(main.runs.rows)
            assert "peak" not in info()
            assert spans_read == []
            release.set()
            await pilot_until(pilot, lambda: "4 stream(s) verified" in banner(), "the check's verdict", limit=60)
            await pilot_until(pilot, lambda: any(row.peak_chars for row in main.runs.rows), "the peaks", limit=30)
            await pilot_until(pilot, lambda: spans_read == [1], "the step starts read", limit=30)
            headers = {r.key.stream_id: r.peak_chars for r in main.runs.rows if r.key.correlation_id is None}
            assert headers == {stream: expected.get(stream) for stream in headers}
            for n in range(len(main.runs.rows)):  # each run's peak drawn in its panel as the cursor reaches it
                if n:
                    await pilot.press("down")
                    await pilot.pause(0.05)
                key = main.current_key()
                assert key is not None
                if key.correlation_id is None and expected.get(key.stream_id):
                    drawn = f"peak {format_size(expected[key.stream_id])}"
                    await pilot_until(pilot, lambda: drawn in info(), f"{drawn} for {key.stream_id}")  # noqa: B023
    finally:
        release.set()


async def test_a_small_store_reads_its_peaks_without_waiting(tmp_path: Path) -> None:
    """Below OWN_PROCESS_BYTES the chains are checked in a thread once every run is listed: nothing waits."""
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    expected = sql_peaks(str(db))
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot_until(pilot, lambda: any(row.peak_chars for row in main.runs.rows), "the peaks", limit=30)
        headers = {r.key.stream_id: r.peak_chars for r in main.runs.rows if r.key.correlation_id is None}
        assert headers == {stream: expected.get(stream) for stream in headers}
