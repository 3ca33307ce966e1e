"""The runs drawn in the dashboard's first frame are let go once every run is drawn (issue 34: the dashboard at a
million events in 100 MB). The newest runs of a store whose newest requests are one long chat's are all of that
chat's turns (long_1m: 5,748); the app, the screen and the runs worker's arguments each held that first list
after the whole list (the same turns again) replaced it: 5.4 MB at long_1m.

The count of runs comes from SQLite; the summaries alive are counted by the garbage collector."""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

from benchmarks.make_long_run import write_clones
from tests.tui_support import make_app, settle
from tests.waiting import pilot_until
from zymi_tui.events.runs import RunSummary, list_runs
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.tui.app import DashboardApp
from zymi_tui.tui.source import FIRST_RUNS, FirstRuns, RestOfRuns, first_runs

EVENTS = 20_000


def sql_counts(db: Path) -> tuple[int, int]:
    """(requests, streams holding more than one request): each request is a run; such a stream also has a row of
    its own in the list."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        per_stream = [n for (n,) in c.execute(
            "SELECT count(*) FROM events WHERE kind_tag = 'pipeline_requested' GROUP BY stream_id")]  # fmt: skip
    return sum(per_stream), sum(1 for n in per_stream if n > 1)


async def app_with_first_runs(db: Path) -> DashboardApp:
    """The app as `observe` starts it: the newest runs read before it starts, the whole list to come from the
    process reading it (here a list emptied as it is taken, as a pipe is)."""
    async with await SqliteReader.open(db) as reader:
        first = await first_runs(reader)
        rest = [RestOfRuns(await list_runs(reader, turns=True), first.last_global_id, [])]
    assert not first.whole and len(first.summaries) > FIRST_RUNS  # every turn of the chat, not the whole list
    app = make_app(db)
    app.first = FirstRuns(first.summaries, False, first.last_global_id, [], rest.pop, lambda: False)
    return app


def summaries_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is RunSummary)


async def test_the_runs_drawn_first_are_let_go_once_every_run_is_drawn(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    write_clones(db, EVENTS)
    requests, chats = sql_counts(db)
    app = await app_with_first_runs(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot_until(pilot, lambda: main.runs_complete and len(main.runs.summaries) == requests, "every run")
        runs_read = lambda: all(w.is_finished for w in app.workers if w.group == "runs")  # noqa: E731
        await pilot_until(pilot, runs_read, "the runs worker")
        alive = summaries_alive()
        # each run once, a chat's own row, and the copy of a turn the writers' check marks interrupted (the one
        # not ended: no process writes this store) held by that check's arguments
        assert alive <= requests + chats + 1, f"{alive} summaries alive for {requests} runs: the first list held"
