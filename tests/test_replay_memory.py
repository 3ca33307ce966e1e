"""A whole-store replay keeps a step's builder only while its run can still have events; a replay of some
streams makes no whole event of a replay kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zymi_tui.events import envelope, replay_view
from zymi_tui.events.envelope import decode_event
from zymi_tui.events.replay_view import replay_event
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import STEP_MARK, run_of
from zymi_tui.replay import event_pages
from zymi_tui.replay.event_pages import replay_events
from zymi_tui.replay.store_ends import stream_ends
from zymi_tui.replay.store_replay import make_replayer, replay_store

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


async def test_a_streams_replay_makes_no_whole_event_of_a_replay_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `streams`, the runs' rows are decoded as a replay reads them (a page at a time): only a row
    of another kind is made a whole event, and the events are those a whole read of the runs gives,
    in global order (recorded by zymi: two runs, their steps)."""
    monkeypatch.setattr(event_pages, "PAGE", 7)  # pages much smaller than a run
    whole_events: list[int] = []

    def counted(data: str, sequence: int) -> Any:
        whole_events.append(sequence)
        return decode_event(data, sequence)

    async with await SqliteReader.open(ORACLE / "chat_profile" / "events.db") as reader:
        streams = [s.stream_id for s in await reader.streams()]
        steps = [s for s in streams if STEP_MARK in s]
        runs = [s for s in streams if STEP_MARK not in s]
        assert len(runs) == 2 and {run_of(s) for s in steps} == set(runs)
        for module in (envelope, replay_view):
            monkeypatch.setattr(module, "decode_event", counted)
        got = [se async for se in replay_events(reader, steps)]
        monkeypatch.undo()
        whole = [se for run in runs for se in await reader.read_stream(run, include_steps=True)]
    assert got == [replay_event(se) for se in sorted(whole, key=lambda se: se.global_id)]
    other_kinds = [se for se in got if se.kind is None]
    assert len(whole_events) == len(other_kinds) and len(got) > len(other_kinds) > 0
    assert [se.global_id for se in got] == sorted(se.global_id for se in got) and len(got) > 7 * 4
