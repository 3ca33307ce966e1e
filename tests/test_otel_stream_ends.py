"""`export --format otel` of a SQLite store holds no list of every stream: its walks read a stream's end
when the replay first asks for it (`StreamEnds`, `SqliteReader.stream_end`), which must be the end the
store's list of streams gives (`SqliteReader.streams`), a BLOB stream id's rows included."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from zymi_tui.cli import main
from zymi_tui.events.sqlite_read import SqliteReader

from .conftest import cloned_runs


def _blob_row(db: Path) -> str:
    """One step-stream row of the store's second run holding its stream id as a BLOB; that stream's name."""
    con = sqlite3.connect(db)
    gid, stream = con.execute(
        "SELECT id, stream_id FROM events WHERE stream_id LIKE 'pipeline-main-1-%' AND stream_id LIKE '%:step:%' "
        "ORDER BY id LIMIT 1"
    ).fetchone()
    con.execute("UPDATE events SET stream_id = CAST(stream_id AS BLOB) WHERE id = ?", (gid,))
    con.commit()
    con.close()
    return str(stream)


async def test_a_streams_end_is_the_one_its_list_gives(tmp_path: Path) -> None:
    from zymi_tui.replay.store_ends import StreamEnds  # (here: the test below runs on a tree without it)

    db = cloned_runs(tmp_path, 3)
    blob_stream = _blob_row(db)
    async with await SqliteReader.open(db, inline=True) as reader:
        listed = await reader.streams()
        top = await reader.max_global_id()
        want = {s.stream_id: s.last_global_id for s in listed}  # (a name listed twice: its BLOB rows' last)
        assert sum(s.stream_id == blob_stream for s in listed) == 2
        ends = StreamEnds(reader.stream_end, top, await reader.named_ends(1_000_000, top))
        assert {name: ends.get(name) for name in want} == want
        assert "no-such-stream" not in ends and ends.get("no-such-stream", 0) == 0
        assert all(name in ends for name in want)
        spans, long = await reader.stream_spans(2)  # (every stream of the clones holds 2 events or more)
        assert sorted(spans) == sorted((s.first_global_id, s.last_global_id) for s in listed) and long == want
        assert await reader.named_ends(2, top) == want and list(await reader.named_ends(1_000_000, top)) == [
            blob_stream
        ]
        cut = top // 2  # up to a global id: each stream's last id at or before it
        con = sqlite3.connect(db)
        below = dict(con.execute("SELECT stream_id, MAX(id) FROM events WHERE id <= ? AND typeof(stream_id) = "
                                 "'text' GROUP BY stream_id", (cut,)).fetchall())  # fmt: skip
        con.close()
        assert {name: reader.stream_end(name, cut) for name in below if name != blob_stream} == {
            name: end for name, end in below.items() if name != blob_stream
        }


@pytest.mark.parametrize("pair_events", ["1000000", "2"])
def test_the_export_reads_no_list_of_streams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], pair_events: str
) -> None:
    """One process, and two (the store cut for a partner): no walk asks for every stream."""
    db = cloned_runs(tmp_path, 4)

    async def listed(self: SqliteReader) -> object:
        raise AssertionError("the export listed every stream")

    monkeypatch.setattr(SqliteReader, "streams", listed)
    monkeypatch.setenv("ZYMI_TUI_OTEL_PAIR_EVENTS", pair_events)
    out = tmp_path / "spans.jsonl"
    assert main(["export", str(db), "--format", "otel", "-o", str(out)]) == 0
    assert out.read_bytes().count(b"\n") > 0
    assert "wrote" in capsys.readouterr().err
