"""A whole-store replay keeps a step's builder only while its run can still have events."""

from __future__ import annotations

from pathlib import Path

from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.store_replay import make_replayer, replay_events, replay_store, stream_ends

from .conftest import cloned_runs


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
