"""Shared helpers for the dashboard tests: private copies of the oracle stores, a pilot app, SQL counts."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import msgspec

from tests.conftest import ORACLE, copy_store
from tests.waiting import LIMIT
from zymi_tui.events.location import SqliteStore
from zymi_tui.tui.app import DashboardApp, MainScreen
from zymi_tui.tui.target import Target


def scenario_copy(name: str, tmp_path: Path) -> Path:
    """`tmp/<name>/events.db` plus `tmp/<name>/project/`, the layout the oracle folders have."""
    dst = tmp_path / name
    db = copy_store(ORACLE / name / "events.db", dst)
    if (ORACLE / name / "project").is_dir():
        shutil.copytree(ORACLE / name / "project", dst / "project")
    return db


def sql(db: Path, query: str, *params: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return list(c.execute(query, params))


def use_utc() -> None:
    os.environ["TZ"] = "UTC"
    time.tzset()


def make_app(db: Path, *, banner: str | None = None, run: str | None = None) -> DashboardApp:
    project = db.parent / "project"
    return DashboardApp(
        Target(SqliteStore(db), project if project.is_dir() else None, run, banner), theme="textual-dark"
    )


async def settle(app: DashboardApp, pilot: object, *, timeout: float = LIMIT) -> MainScreen:
    """Wait until the runs list has been loaded (maybe empty) and the selected run fully loaded."""
    import asyncio

    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    deadline = time.monotonic() + timeout
    while True:
        await pilot.pause(0.05)
        try:
            main = app.main
        except LookupError:
            continue
        ready = (
            main.reader is not None
            and (main.selected is None or not main.run_loading)
            and main.current_key() == main.selected
        )
        if ready and (main.runs_seen or main.trouble):
            await pilot.pause(0.05)
            return main
        assert time.monotonic() < deadline, f"the dashboard did not settle within {timeout:.0f} s"
        await asyncio.sleep(0)


async def append_copy_of_run(db: Path) -> str:
    """Append, as another writer would, a fresh copy of the store's first run (new ids); returns its stream."""
    import uuid

    from zymi_tui.events.runs import list_runs
    from zymi_tui.events.sqlite_read import SqliteReader
    from zymi_tui.events.sqlite_write import SqliteWriter

    async with await SqliteReader.open(db) as r:
        run = (await list_runs(r))[-1]
        events = await r.read_stream(run.stream_id, include_steps=True)
    new_stream = f"pipeline-copy-{uuid.uuid4()}"
    async with await SqliteWriter.open(db) as w:
        for se in events:
            ev = se.event
            stream = ev.stream_id.replace(run.stream_id, new_stream)
            await w.append(msgspec.structs.replace(ev, id=str(uuid.uuid4()), stream_id=stream))
    return new_stream
