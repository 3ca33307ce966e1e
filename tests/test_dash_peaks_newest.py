"""The runs' peaks are read newest first (issue 34): the runs list shows the newest runs at the top, so their
peak column is painted before the older runs' below them (at a million events, with the peaks waiting for the
chain check, oldest first put the top row's peak ~15 s after the bottom's). Both store readers read a kind's
rows from the top down (`read_rows_before`); every figure is checked against SQL's own."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from tests.conftest import cloned_runs
from tests.test_runs_peaks import sql_peaks
from tests.tui_support import make_app, settle
from tests.waiting import pilot_until
from zymi_tui.events.postgres_read import PostgresReader
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import EventReader
from zymi_tui.tui import messages
from zymi_tui.tui.app import MainScreen
from zymi_tui.tui.model import RunKey, format_size
from zymi_tui.tui.source import read_peaks
from zymi_tui.tui.widgets import RunsList

from .test_postgres_helpers import pg_url, run_cli

__all__ = ["pg_url"]

CLONES = 6
CALLS_PER_RUN = 26  # llm_call_started rows of coding_default's run


def store_of_runs(tmp: Path) -> Path:
    """CLONES copies of coding_default's run, each call's approx_context_chars raised by its id (plain SQL):
    every run has a peak of its own."""
    db = cloned_runs(tmp, CLONES)
    with sqlite3.connect(db) as c:
        c.execute(
            "UPDATE events SET data = json_set(data, '$.kind.data.approx_context_chars', "
            "json_extract(data, '$.kind.data.approx_context_chars') + id * 37) WHERE kind_tag = 'llm_call_started'"
        )
    return db


def sql_ids_desc(db: Path, tag: str) -> list[int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return [gid for (gid,) in c.execute("SELECT id FROM events WHERE kind_tag = ? ORDER BY id DESC", (tag,))]


async def walked_down(reader: EventReader, tag: str, limit: int) -> list[int]:
    out: list[int] = []
    cursor: int | None = None
    while True:
        page = await reader.read_rows_before(cursor, limit, tag=tag)
        out += [gid for gid, _, _, _ in page.rows]
        assert [gid for gid, _, _, _ in page.rows] == sorted((gid for gid, _, _, _ in page.rows), reverse=True)
        cursor = page.last_global_id
        if page.rows_scanned < limit:
            return out


@pytest.mark.parametrize("limit", [1, 7, CALLS_PER_RUN, 10_000])
async def test_sqlite_reads_a_kind_from_the_top_down(limit: int, tmp_path: Path) -> None:
    db = store_of_runs(tmp_path)
    async with await SqliteReader.open(db) as reader:
        for tag in ["llm_call_started", "response_ready", "no_such_kind"]:
            assert await walked_down(reader, tag, limit) == sql_ids_desc(db, tag)
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
            below = [r for r in c.execute(
                "SELECT id, stream_id, sequence, data FROM events WHERE kind_tag = 'llm_call_started' AND id < 40 "
                "ORDER BY id DESC LIMIT 3")]  # fmt: skip
        page = await reader.read_rows_before(40, 3, tag="llm_call_started")
        assert page.rows == below and page.last_global_id == below[-1][0]


async def test_postgres_reads_a_kind_from_the_top_down_and_its_peaks_match_sql(pg_url: str, tmp_path: Path) -> None:
    db = store_of_runs(tmp_path)
    assert (await asyncio.to_thread(run_cli, "migrate", str(db), pg_url)).returncode == 0
    async with await PostgresReader.open(pg_url) as reader:
        for limit in [1, 7, CALLS_PER_RUN, 10_000]:
            assert await walked_down(reader, "llm_call_started", limit) == sql_ids_desc(db, "llm_call_started")
        peaks: dict[RunKey, int] = {}
        async for page in read_peaks(reader, {}):
            for key, chars in page.items():
                peaks[key] = max(chars, peaks.get(key, -1))
        assert reader.problems == []
        # Postgres's own figure, by SQL on the server
        rows = await reader._fetch(
            "SELECT split_part(stream_id, ':step:', 1), "
            "max(((data::json)->'kind'->'data'->>'approx_context_chars')::bigint) "
            "FROM events WHERE kind_tag = 'llm_call_started' GROUP BY 1"
        )
    assert {k.stream_id: v for k, v in peaks.items()} == {s: int(v) for s, v in rows}
    assert {s: int(v) for s, v in rows} == sql_peaks(str(db))


def row_text(main: MainScreen, y: int) -> str:
    return main.query_one(RunsList).render_line(y).text


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_top_rows_peak_is_painted_first(
    size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = store_of_runs(tmp_path)
    expected = sql_peaks(str(db))  # by SQL, not by the package
    monkeypatch.setattr("zymi_tui.tui.source.PAGE", CALLS_PER_RUN)  # a page a run (the clones are laid out in turn)
    gate = threading.Semaphore(0)
    real = messages.PeaksLoaded.__init__

    def held(self: messages.PeaksLoaded, peaks: dict[RunKey, int]) -> None:
        assert gate.acquire(timeout=60)  # each page's peaks are posted when the test lets them
        real(self, peaks)

    monkeypatch.setattr(messages.PeaksLoaded, "__init__", held)
    app = make_app(db)
    try:
        async with app.run_test(size=size) as pilot:
            main = await settle(app, pilot)
            await pilot_until(pilot, lambda: main.runs_complete and len(main.runs.rows) == CLONES, "every run listed")
            rows = main.runs.rows
            visible = min(len(rows), main.query_one(RunsList).scrollable_content_region.height)
            assert visible >= 3
            shown = [f"{format_size(expected[rows[y].key.stream_id])} " for y in range(visible)]
            assert all(format_size(None) in row_text(main, y) for y in range(visible))
            painted: list[int] = []  # rows (top = 0) in the order their peaks were painted

            def newly_painted() -> list[int]:
                return [y for y in range(visible) if y not in painted and shown[y] in row_text(main, y)]

            for _ in range(CLONES):
                gate.release()
                await pilot_until(pilot, lambda: newly_painted() or len(painted) == visible, "the next peak painted")
                painted.extend(newly_painted())
                await pilot.pause(0.05)
            assert painted[0] == 0, f"rows painted in the order {painted}"
            assert painted.index(0) < painted.index(visible - 1)
            assert painted == list(range(visible))
            # every run's peak, in the model and on its row, is SQL's
            assert {r.key.stream_id: r.peak_chars for r in rows} == {
                r.key.stream_id: expected[r.key.stream_id] for r in rows
            }
            for y in range(visible):
                assert shown[y] in row_text(main, y)
            for y in range(len(rows)):  # the ones below the fold: scrolled to with the keys, drawn in the run panel
                if y:
                    await pilot.press("down")
                    await pilot.pause(0.05)
                drawn = f"peak {format_size(expected[rows[y].key.stream_id])}"
                await pilot_until(pilot, lambda: drawn in str(main.query_one("#run-info").render()), drawn)  # noqa: B023
    finally:
        for _ in range(CLONES):
            gate.release()
