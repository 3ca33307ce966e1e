"""A run's ids (id, stream, sequence: no kind, no data), the kinds of ids, and its rows read by id, on
every backend: the same rows, in the same order, as reading the whole run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from zymi_tui.events import sqlite_runs as runs_side
from zymi_tui.events.factory import open_reader, open_writer
from zymi_tui.events.kinds import Event, LlmCallStarted
from zymi_tui.events.location import location_of
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import EventReader
from zymi_tui.tui.tuning.memory_reader import load_run

from .conftest import copy_store, oracle_db
from .test_postgres_helpers import pg_url

__all__ = ["pg_url"]


async def check(reader: EventReader, run: str) -> None:
    whole = await reader.read_stream(run, include_steps=True)
    ids = await reader.run_ids(run)
    assert ids == [(se.global_id, se.event.stream_id, se.event.sequence) for se in whole]
    assert {stream for _, stream, _ in ids} == {run, f"{run}:step:reply"}
    assert [(gid, stream, seq) for gid, stream, seq, _ in await reader.run_index(run)] == ids  # in columns
    assert await reader.kinds_of([gid for gid, *_ in ids]) == {se.global_id: se.event.tag for se in whole}
    index = [(se.global_id, se.event.stream_id, se.event.sequence, se.event.tag) for se in whole]
    thin = index[::3]  # ids spread over three times their number: read by id
    assert await reader.kinds_of([gid for gid, *_ in thin] + [10**9]) == {gid: tag for gid, _, _, tag in thin}
    some = [gid for gid, *_ in index][::3]
    got = await reader.read_ids([*reversed(some), 10**9])  # any order asked, unknown ids left out
    assert [se.global_id for se in got] == some
    assert [se.data for se in got] == [se.data for se in whole[::3]]
    rows = await reader.read_id_rows([*reversed(some), 10**9])  # the same rows, not decoded
    assert rows == [(se.global_id, se.event.stream_id, se.event.sequence, se.data) for se in whole[::3]]
    many = [gid for gid, *_ in index]
    assert [se.global_id for se in await reader.read_ids(many)] == many


async def test_sqlite_and_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    monkeypatch.setattr(runs_side, "ID_BATCH", 50)  # the run's 331 events: several statements
    async with await SqliteReader.open(db) as reader:
        for dense in (0, 10**6):  # kinds read by id only; by each known kind's index over the ids' span
            monkeypatch.setattr(runs_side, "DENSE_SPAN", dense)
            await check(reader, "chat-42")
        ids = [gid for gid, *_ in await reader.run_ids("chat-42")]
        assert len(ids) > 300
        with sqlite3.connect(db) as c:  # a kind column naming no known kind
            c.execute("UPDATE events SET kind_tag = 'odd\x1b' WHERE id = ?", (ids[5],))
        for dense in (0, 10**6):
            monkeypatch.setattr(runs_side, "DENSE_SPAN", dense)
            kinds = await reader.kinds_of(ids)
            assert len(kinds) == len(ids) and kinds[ids[5]] == "odd\x1b"
        await check(await load_run(reader, "chat-42"), "chat-42")
        assert await reader.run_ids("no-such-run") == []
        assert len(await reader.run_index("no-such-run")) == 0


async def test_postgres(tmp_path: Path, pg_url: str) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    async with await SqliteReader.open(db) as src:
        events = [se.event for se in await src.read_stream("chat-42", include_steps=True)]
    writer = await open_writer(location_of(pg_url))
    try:
        await writer.append(
            Event.new("other", LlmCallStarted(iteration=1, message_count=1, approx_context_chars=1), "t")
        )
        for ev in events:
            await writer.append(ev)
    finally:
        await writer.close()
    reader = await open_reader(location_of(pg_url))
    try:
        await check(reader, "chat-42")
    finally:
        await reader.close()
