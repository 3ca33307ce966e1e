"""A whole-store replay keeps a step's builder only while its run can still have events; a replay of some
streams reads their runs a page at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zymi_tui.events.replay_view import replay_event
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import STEP_MARK, RowPage, run_of
from zymi_tui.replay import store_replay
from zymi_tui.replay.store_replay import make_replayer, replay_events, replay_store, stream_ends

from .conftest import ORACLE, cloned_runs


async def test_finished_runs_leave_no_builder_and_change_no_figure(tmp_path: Path) -> None:
    db = cloned_runs(tmp_path, 4)
    async with await SqliteReader.open(db) as reader:
        forgetting = make_replayer(None)
        forgetting.forget_finished(await stream_ends(reader))
        keeping = make_replayer(None)
        most, got, want = 0, [], []
        async for se in replay_events(reader, None):
            forgetting.feed(se)
            keeping.feed(se)
            got += forgetting.ready()
            want += keeping.ready()
            most = max(most, len(forgetting.steps))
        got += forgetting.flush()
        want += keeping.flush()
        via_store = [row async for row in replay_store(reader, project=None)]
    assert most == 1 and len(keeping.steps) == 4  # one step stream per run: only the running one is kept
    figures = [[(r.stream_id, r.sequence, r.chars, r.message_count) for r in rows] for rows in (got, want, via_store)]
    assert figures[0] == figures[1] == figures[2] and len(figures[0]) > 4


async def test_a_streams_replay_pages_through_its_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `streams`, the runs are read a page at a time (never whole: a long run's replay stays flat)
    and give the events a whole read of them gives, in global order (recorded by zymi: two runs)."""
    monkeypatch.setattr(store_replay, "PAGE", 7)  # pages much smaller than a run: the merge is exercised
    async with await SqliteReader.open(ORACLE / "chat_profile" / "events.db") as reader:
        streams = [s.stream_id for s in await reader.streams()]
        steps = [s for s in streams if STEP_MARK in s]
        runs = [s for s in streams if STEP_MARK not in s]
        assert len(runs) == 2 and {run_of(s) for s in steps} == set(runs)
        limits: list[int] = []
        read_rows = reader.read_rows

        async def counted(after: int, limit: int, **kw: Any) -> RowPage:
            limits.append(limit)
            return await read_rows(after, limit, **kw)

        monkeypatch.setattr(reader, "read_rows", counted)
        got = [se async for se in replay_events(reader, steps)]
        monkeypatch.undo()
        whole = [se for run in runs for se in await reader.read_stream(run, include_steps=True)]
    assert limits and all(0 < n <= 7 for n in limits)
    assert got == [replay_event(se) for se in sorted(whole, key=lambda se: se.global_id)]
    assert [se.global_id for se in got] == sorted(se.global_id for se in got) and len(got) > 7 * 4
