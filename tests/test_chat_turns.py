"""Chat turn boundaries on the 16-turn chat the real engine recorded (oracle chat_profile, stream chat-42):
each turn holds exactly the events from its UserMessageReceived up to the next one. Expected event ids come
from SQL over the store, never from the code under test."""

from __future__ import annotations

import sqlite3
from itertools import pairwise
from pathlib import Path

import pytest

from tests.conftest import copy_store, oracle_db
from zymi_tui.events.runs import list_runs
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.tui.model import RunKey
from zymi_tui.tui.source import read_run


def expected_turns(db: Path, stream: str) -> list[list[int]]:
    """Per turn, the ids of the events of the stream and its step streams from its UserMessageReceived
    (on the run stream) up to the next one."""
    opening = "SELECT id FROM events WHERE stream_id = ? AND kind_tag = 'user_message_received' ORDER BY id"
    inside = "SELECT id FROM events WHERE (stream_id = ? OR stream_id LIKE ?) AND id >= ? AND id < ? ORDER BY id"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        opens = [g for (g,) in con.execute(opening, (stream,))]
        bounds = [*opens, 1 << 62]
        return [
            [g for (g,) in con.execute(inside, (stream, stream + ":step:%", lo, hi))] for lo, hi in pairwise(bounds)
        ]
    finally:
        con.close()


async def turns_as_read(db: Path, stream: str) -> list[list[int]]:
    async with await SqliteReader.open(db) as reader:
        turns = sorted((t for t in await list_runs(reader, turns=True) if t.stream_id == stream), key=lambda t: t.turn)
        return [[se.global_id for se in await read_run(reader, RunKey(stream, t.correlation_id))] for t in turns]


@pytest.mark.parametrize("stream", ["chat-42", "chat-7"])
async def test_each_turn_runs_from_its_message_to_the_next(stream: str) -> None:
    want = expected_turns(oracle_db("chat_profile"), stream)
    assert len(want) == {"chat-42": 16, "chat-7": 2}[stream]
    got = await turns_as_read(oracle_db("chat_profile"), stream)
    assert [len(t) for t in got] == [len(t) for t in want]
    assert got == want


async def test_a_message_without_a_correlation_id_opens_its_own_turn(tmp_path: Path) -> None:
    """A connector may write its UserMessageReceived with no correlation id: it still opens the turn it asked
    for, and is not the last event of the turn before."""
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    with sqlite3.connect(db) as con:
        changed = con.execute(
            "UPDATE events SET correlation_id = NULL, data = json_set(data, '$.correlation_id', json('null')) "
            "WHERE kind_tag = 'user_message_received' AND stream_id = 'chat-42'"
        ).rowcount
    assert changed == 16
    want = expected_turns(db, "chat-42")
    got = await turns_as_read(db, "chat-42")
    assert got == want
