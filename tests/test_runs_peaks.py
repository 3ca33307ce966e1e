"""The runs list's peaks come from the llm_call_started rows' few fields, and land on the right rows."""

from __future__ import annotations

import sqlite3

from zymi_tui.events.runs import list_runs
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.tui.model import RunKey, RunsModel
from zymi_tui.tui.source import read_peaks

from .conftest import oracle_db


def sql_peaks(db: str) -> dict[str, int]:
    """Per run stream, the largest approx_context_chars of its step streams, by SQL (not by the package)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT substr(stream_id, 1, instr(stream_id || ':step:', ':step:') - 1), "
        "max(json_extract(data, '$.kind.data.approx_context_chars')) FROM events "
        "WHERE kind_tag = 'llm_call_started' GROUP BY 1"
    ).fetchall()
    con.close()
    return dict(rows)


async def test_peaks_per_run_and_per_turn_land_on_their_rows() -> None:
    db = str(oracle_db("chat_profile"))
    async with await SqliteReader.open(db) as reader:
        summaries = await list_runs(reader, turns=True)
        turn_of = {s.correlation_id: s.stream_id for s in summaries if s.turns_on_stream > 1 and s.correlation_id}
        model = RunsModel()
        model.set_runs(summaries)
        for peaks in [p async for p in read_peaks(reader, turn_of)]:
            for key, chars in peaks.items():
                model.set_peak(key, chars)
        assert reader.problems == []
    expected = sql_peaks(db)
    headers = {row.key.stream_id: row.peak_chars for row in model.rows if row.key.correlation_id is None}
    assert headers == {s: expected.get(s) for s in headers}
    turns = [row for row in model.rows if row.is_turn]
    assert turns and all(row.peak_chars is not None and row.peak_chars <= headers[row.key.stream_id] for row in turns)
    assert max(row.peak_chars or 0 for row in turns if row.key.stream_id == "chat-42") == expected["chat-42"]
    model.mark_broken("chat-42")
    assert {row.key for row in model.rows if row.broken_chain} == {
        row.key for row in model.rows if row.key.stream_id == "chat-42"
    }
    assert model.index_of(RunKey("chat-42")) == [row.key for row in model.rows].index(RunKey("chat-42"))
