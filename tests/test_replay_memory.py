"""A whole-store replay keeps a step's builder only while its run can still have events."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

from zymi_tui.events.sqlite import SqliteReader
from zymi_tui.replay.calls import make_replayer, replay_events, replay_store, stream_ends

from .conftest import oracle_db


def cloned_runs(tmp: Path, clones: int) -> Path:
    """`clones` copies of the coding_default run, one after another, each under its own stream ids."""
    src = sqlite3.connect(f"file:{oracle_db('coding_default')}?mode=ro", uri=True)
    ddl = [r[0] for r in src.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'")]
    rows = src.execute(
        "SELECT stream_id, sequence, timestamp, kind_tag, data, source FROM events ORDER BY id"
    ).fetchall()
    src.close()
    db = tmp / "runs.db"
    out = sqlite3.connect(db)
    out.execute(ddl[0])
    for k in range(clones):
        for stream, seq, ts, tag, data, source in rows:
            new_stream = stream.replace("pipeline-main-", f"pipeline-main-{k}-", 1)
            env = json.loads(data) | {"id": str(uuid.uuid4()), "stream_id": new_stream}
            out.execute(
                "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (env["id"], new_stream, seq, ts, tag, json.dumps(env, separators=(",", ":")), source),
            )
    out.commit()
    out.close()
    return db


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
