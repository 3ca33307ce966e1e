"""A replay decodes the rows it reads with msgspec (`replay_view`): it must read every row exactly as
the whole-event decoder does (the same fields, the same messages), and refuse the same rows with the
same words."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from zymi_tui.events.envelope import EventDecodeError, decode_event
from zymi_tui.events.replay_view import ReplayEvent, decode_replay_row, replay_event
from zymi_tui.events.stored import StoredEvent
from zymi_tui.replay.call_context import REPLAY_KINDS, TYPE_BY_TAG

from .conftest import SCENARIOS, oracle_db


def rows(scenario: str) -> list[tuple[str, int, int, str]]:
    con = sqlite3.connect(f"file:{oracle_db(scenario)}?mode=ro", uri=True)
    marks = ",".join("?" * len(REPLAY_KINDS))
    sql = f"SELECT kind_tag, id, sequence, data FROM events WHERE kind_tag IN ({marks}) ORDER BY id"
    found = con.execute(sql, REPLAY_KINDS).fetchall()
    con.close()
    return found


def whole(gid: int, seq: int, data: str) -> ReplayEvent | str:
    """The reference: the whole pydantic event, seen as a replay sees it (or the error it raises)."""
    try:
        return replay_event(StoredEvent(gid, decode_event(data, seq), data))
    except EventDecodeError as e:
        return f"refused: {e}"


def lean(tag: str, gid: int, seq: int, data: str) -> ReplayEvent | str:
    try:
        return decode_replay_row(TYPE_BY_TAG[tag], gid, seq, data)
    except EventDecodeError as e:
        return f"refused: {e}"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_recorded_row_reads_as_the_whole_event(scenario: str) -> None:
    found = rows(scenario)
    assert found
    for tag, gid, seq, data in found:
        assert lean(tag, gid, seq, data) == whole(gid, seq, data)


def edit(path: list[str], value: Any) -> Callable[[dict[str, Any]], Any]:
    def change(obj: dict[str, Any]) -> Any:
        at = obj
        for key in path[:-1]:
            at = at[key]
        if value is KeyError:
            del at[path[-1]]
        else:
            at[path[-1]] = value
        return obj

    return change


DATA = ["kind", "data"]
EDITS: dict[str, tuple[str, Callable[[dict[str, Any]], Any]]] = {
    "an int as text (pydantic's lax mode reads it)": ("llm_call_started", edit([*DATA, "iteration"], "5")),
    "an int as a float": ("llm_call_started", edit([*DATA, "iteration"], 5.0)),
    "a bool for an int": ("llm_call_started", edit([*DATA, "iteration"], True)),
    "a missing field": ("llm_call_started", edit([*DATA, "message_count"], KeyError)),
    "an extra field": ("llm_call_started", edit([*DATA, "zzz"], 1)),
    "a message with an extra key": ("llm_call_completed", edit([*DATA, "response_message", "Assistant", "x"], 1)),
    "a null message": ("llm_call_completed", edit([*DATA, "response_message"], None)),
    "an unknown message variant": ("llm_call_completed", edit([*DATA, "response_message"], {"Nope": "x"})),
    "usage as text": ("llm_call_completed", edit([*DATA, "usage"], {"input_tokens": "7", "output_tokens": 1})),
    "a null result": ("tool_call_completed", edit([*DATA, "result"], None)),
    "another kind than the tag says": ("llm_call_started", edit(["kind", "type"], "ToolCallRequested")),
    "an unknown kind": ("llm_call_started", edit(["kind", "type"], "Whatever")),
    "a bad correlation id": ("llm_call_started", edit(["correlation_id"], "not-a-uuid")),
    "a braced id": ("llm_call_started", lambda o: edit(["id"], "{" + o["id"] + "}")(o)),
    "month 13": ("llm_call_started", edit(["timestamp"], "2024-13-01T00:00:00Z")),
    "a +02:00 timestamp": ("llm_call_started", lambda o: edit(["timestamp"], o["timestamp"][:-1] + "+02:00")(o)),
    "the sequence as text": ("llm_call_started", edit(["sequence"], "0")),
    "no source": ("llm_call_started", edit(["source"], KeyError)),
    "no kind data": ("llm_call_started", edit(["kind", "data"], KeyError)),
    "a step description": ("workflow_node_started", edit([*DATA, "zymi_tui"], {"system_prompt": "s", "knobs": {}})),
    "inputs not text": ("pipeline_requested", edit([*DATA, "inputs"], {"a": 1})),
}


@pytest.mark.parametrize(("tag", "change"), EDITS.values(), ids=EDITS.keys())
def test_a_changed_row_reads_or_is_refused_as_the_whole_event(tag: str, change: Callable[[Any], Any]) -> None:
    _, gid, seq, data = next(r for r in rows("coding_default") if r[0] == tag)
    changed = json.dumps(change(json.loads(data)), ensure_ascii=False, separators=(",", ":"))
    assert changed != data
    assert lean(tag, gid, seq, changed) == whole(gid, seq, changed)


@pytest.mark.parametrize(
    "text",
    ['{"id":"\udcff"}', '{"id":', "[" * 5000 + "]" * 5000, "null"],
    ids=["not UTF-8", "cut short", "nested too deep", "not an object"],
)
def test_text_that_is_no_event_is_refused_in_the_same_words(text: str) -> None:
    assert lean("llm_call_started", 1, 1, text) == whole(1, 1, text)
    assert str(whole(1, 1, text)).startswith("refused")
