"""The newest N events of a run and its step streams: the same as the tail of the whole run, at any size."""

from __future__ import annotations

from pathlib import Path

import pytest

from zymi_tui.events import sqlite_filtered as backend
from zymi_tui.events.kinds import Event, LlmCallStarted
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_write import SqliteWriter

from .conftest import copy_store, oracle_db


@pytest.mark.parametrize("n", [1, 7, 100, 10_000])
async def test_newest_is_the_tail_of_the_run(tmp_path: Path, n: int) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    async with await SqliteReader.open(db) as reader:
        whole = await reader.read_stream("chat-42", include_steps=True)
        got = await reader.newest("chat-42", n, include_steps=True)
        alone = await reader.newest("chat-42", n)
        run_only = await reader.read_stream("chat-42")
    assert {se.event.stream_id for se in whole} == {"chat-42", "chat-42:step:reply"}
    assert [se.global_id for se in got] == [se.global_id for se in whole[-n:]]
    assert [se.global_id for se in alone] == [se.global_id for se in run_only[-n:]]


async def test_a_run_with_more_step_streams_than_one_statement_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "e.db"
    async with await SqliteWriter.open(db) as w:
        events = [
            Event.new(f"r:step:s{i % 9}", LlmCallStarted(iteration=i, message_count=1, approx_context_chars=i), "t")
            for i in range(60)
        ]
        await w.append_many([Event.new("r", LlmCallStarted(iteration=0, message_count=1, approx_context_chars=0), "t")])
        await w.append_many(events)
        await w.append_many(
            [Event.new("r2", LlmCallStarted(iteration=0, message_count=1, approx_context_chars=0), "t")]
        )
    async with await SqliteReader.open(db) as reader:
        whole = [se.global_id for se in await reader.read_stream("r", include_steps=True)]
        merged = [se.global_id for se in await reader.newest("r", 25, include_steps=True)]
        monkeypatch.setattr(backend, "MAX_UNION", 3)  # 10 streams: past what one statement merges
        sorted_ids = [se.global_id for se in await reader.newest("r", 25, include_steps=True)]
    assert len(whole) == 61 and merged == sorted_ids == whole[-25:]
