"""The events search reads a long run's rows with msgspec (`row_describe`) to make the line each row shows:
for every row it must give the line `describe` gives of the whole pydantic event, byte for byte, and
refuse the rows the whole-event decoder refuses, in the same words."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hostile_stores import ESCAPES, HOSTILE, MARKUP, NUL, UNICODE, make_store
from tests.test_replay_kinds import DATA, edit
from tests.test_replay_kinds import EDITS as REPLAY_EDITS
from tests.test_replay_kinds import rows as replay_rows
from tests.test_store_write import SAMPLES
from zymi_tui.events import row_describe
from zymi_tui.events.describe import Line, describe
from zymi_tui.events.envelope import EventDecodeError, decode_event
from zymi_tui.events.kinds import KNOWN_KINDS, Event, parse_kind
from zymi_tui.events.row_describe import row_line

from .conftest import ROOT, SCENARIOS, oracle_db

SAMPLE_STORE = ROOT / "zymi_tui" / "data" / "sample" / "chat_session" / "events.db"


def whole(data: str, seq: int) -> tuple[str, Line] | str:
    """The reference: the whole event's kind name and `describe` line (or the error decoding it raises)."""
    try:
        event = decode_event(data, seq)
    except EventDecodeError as e:
        return f"refused: {e}"
    return event.type_name, describe(event)


def lean(data: str, seq: int) -> tuple[str, Line] | str:
    try:
        return row_line(data, seq)
    except EventDecodeError as e:
        return f"refused: {e}"


def stored_rows(db: Path) -> list[tuple[int, str]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT sequence, data FROM events ORDER BY id").fetchall()
    finally:
        con.close()


@pytest.fixture
def whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rows `row_line` handed to the whole-event decoder (those its own checks did not read)."""
    handed: list[str] = []

    def counted(data: str, sequence: int) -> Event:
        handed.append(data)
        return decode_event(data, sequence)

    monkeypatch.setattr(row_describe, "decode_event", counted)
    return handed


def same_on_every_row(db: Path) -> set[str]:
    """Every row of the store read both ways; the kinds seen."""
    kinds = set()
    found = stored_rows(db)
    for seq, data in found:
        expected = whole(data, seq)
        assert lean(data, seq) == expected, data[:300]
        kinds.add(expected[0] if isinstance(expected, tuple) else "refused")
    return kinds


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_recorded_row_shows_the_line_of_the_whole_event(scenario: str, whole_reads: list[str]) -> None:
    assert len(same_on_every_row(oracle_db(scenario))) > 3
    assert whole_reads == []  # zymi's rows are read by the structs alone


def test_every_row_of_the_sample_store_shows_the_line_of_the_whole_event(whole_reads: list[str]) -> None:
    assert "UserMessageReceived" in same_on_every_row(SAMPLE_STORE)
    assert whole_reads == []


@pytest.mark.parametrize("name", HOSTILE)
async def test_every_row_of_a_hostile_store_shows_the_line_of_the_whole_event(
    name: str, tmp_path: Path, whole_reads: list[str]
) -> None:
    db, _ = await make_store(name, tmp_path / name)
    kinds = same_on_every_row(db)
    assert name == "empty" or len(kinds) > 3
    if name == "unknown_kinds":
        assert "FutureThingHappened" in kinds
    # only a kind this version does not know goes to the whole-event decoder
    assert all('"FutureThingHappened"' in data for data in whole_reads)


# every kind, with the values that take each branch of its line, and store text a person really has
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "PipelineCompleted": [{"success": False, "error": None}, {"success": False, "error": "é" * 70}],
    "AgentProcessingCompleted": [{"success": False}],
    "LlmCallStarted": [{"iteration": 0}],
    "LlmCallCompleted": [
        {"usage": None, "has_tool_calls": False, "content_preview": "x\ny " * 40, "response_message": None},
        {"response_message": {"Assistant": {"content": "hi", "tool_calls": []}}, "finish_reason": None},
    ],
    "UserMessageReceived": [
        {"content": {"UserMultimodal": {"parts": [{"Text": "a"}, {"ImageBase64": {"media_type": "i", "data": "x"}}]}}},
        {"content": {"System": "s"}},
    ],
    "ToolCallCompleted": [{"result": "", "is_error": True}, {"result": "line\n" * 50}],
    "ReasoningAnswered": [{"is_error": True}],
    "OutputResolved": [{"via": {"form": "any_of", "skipped": ["a", "b"]}}, {"via": {"form": "any_of"}}],
    "MemoryWritten": [{"previous_value_seq": 4}],
    "ContextCompacted": [{"bytes_saved": -1204}],
    "McpServerDisconnected": [{"reason": "crashed"}],
    "ApprovalDenied": [{"reason": None}],
    "WorkflowCompleted": [{"success": False}],
    "WorkflowNodeCompleted": [{"success": False}],
    "PipelineRequested": [{"inputs": {}}, {"inputs": {"a": "1", "b": "2"}}],
}
TEXTS: dict[str, Callable[[str], str]] = {
    "as written": lambda s: s,
    "markup": lambda s: s + MARKUP,
    "escapes": lambda s: s + ESCAPES,
    "unicode": lambda s: s + UNICODE,
    "nul": lambda s: s + NUL,
    "quotes and a kind inside": lambda s: s + '"kind":{"type":"LlmCallStarted"} \\ "',
}


def payloads() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name, data in SAMPLES.items():
        for variant in [{}, *VARIANTS.get(name, [])]:
            out.append((name, {**data, **variant}))
    return out


def texts(value: Any, f: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return f(value)
    if isinstance(value, list):
        return [texts(v, f) for v in value]
    if isinstance(value, dict):
        return {k: texts(v, f) for k, v in value.items()}
    return value


def row(name: str, data: Any) -> str:
    kind = parse_kind(name, data)
    return Event.new("run-1:step:a", kind, "engine", str(uuid.UUID(int=3))).to_json()


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_every_kind_in_every_form_shows_the_line_of_the_whole_event(
    text: Callable[[str], str], whole_reads: list[str]
) -> None:
    seen = set()
    for name, data in payloads():
        changed = texts(data, text)
        if name == "OutputResolved":  # `form` decides the line: kept as written
            changed["via"] = data["via"]
        try:
            stored = row(name, changed)
        except ValueError:  # a value the kind does not take (an image's data is base64)
            stored = row(name, data)
        assert lean(stored, 7) == whole(stored, 7), stored
        seen.add(name)
    assert seen == set(KNOWN_KINDS)
    assert whole_reads == []


EDITS: dict[str, tuple[str, Callable[[dict[str, Any]], Any]]] = {
    "an int as text (pydantic's lax mode reads it)": ("ShellSessionStarted", edit([*DATA, "pid"], "5")),
    "an int as a float": ("McpServerConnected", edit([*DATA, "tool_count"], 5.0)),
    "a bool as an int": ("WorkflowCompleted", edit([*DATA, "success"], 1)),
    "a bool as text": ("AgentProcessingCompleted", edit([*DATA, "success"], "true")),
    "an int past 64 bits": ("OutboundDispatched", edit([*DATA, "status"], 2**70)),
    "a negative int": ("WorkflowStarted", edit([*DATA, "node_count"], -(2**63))),
    "a missing field": ("ToolCallRequested", edit([*DATA, "call_id"], KeyError)),
    "a null text": ("IntentionEvaluated", edit([*DATA, "verdict"], None)),
    "a text as a number": ("ResponseReady", edit([*DATA, "content"], 12)),
    "an extra field": ("StepSkipped", edit([*DATA, "zzz"], [1])),
    "skipped not a list": ("OutputResolved", edit([*DATA, "via", "skipped"], "a")),
    "via with an extra key": ("OutputResolved", edit([*DATA, "via", "x"], 1)),
    "a missing optional field": ("ApprovalRequested", edit([*DATA, "explanation"], KeyError)),
    "a bad message": ("UserMessageReceived", edit([*DATA, "content"], {"User": 3})),
    "a bad usage": ("LlmCallCompleted", edit([*DATA, "usage"], {"input_tokens": 1})),
    "a range of three": ("ContextCompacted", edit([*DATA, "replaces_seq_range"], [1, 2, 3])),
    "another kind than its data": ("ScheduledTaskTriggered", edit(["kind", "type"], "ResponseReady")),
    "a kind name that is not text": ("ResponseReady", edit(["kind", "type"], 5)),
    "a stream id that is not text": ("ResponseReady", edit(["stream_id"], 1)),
}


@pytest.mark.parametrize(("name", "change"), EDITS.values(), ids=EDITS.keys())
def test_a_changed_row_shows_or_is_refused_as_the_whole_event(name: str, change: Callable[[Any], Any]) -> None:
    data = json.dumps(change(json.loads(row(name, SAMPLES[name]))), ensure_ascii=False, separators=(",", ":"))
    assert lean(data, 3) == whole(data, 3)


@pytest.mark.parametrize(("tag", "change"), REPLAY_EDITS.values(), ids=REPLAY_EDITS.keys())
def test_a_row_changed_as_the_replay_test_changes_it_shows_or_is_refused_as_the_whole_event(
    tag: str, change: Callable[[Any], Any]
) -> None:
    """The replay's edits (the envelope's ids, timestamp, sequence and source; its kinds' fields), on a row."""
    _, _, seq, data = next(r for r in replay_rows("coding_default") if r[0] == tag)
    changed = json.dumps(change(json.loads(data)), ensure_ascii=False, separators=(",", ":"))
    assert lean(changed, seq) == whole(changed, seq)


_RESPONSE = row("ResponseReady", SAMPLES["ResponseReady"])
ODD = {
    "not UTF-8": '{"id":"\udcff"}',
    "cut short": '{"id":',
    "nested too deep": "[" * 5000 + "]" * 5000,
    "not an object": "null",
    "empty": "",
    "a lone surrogate escaped": _RESPONSE.replace("done", "\\ud800"),
    "a byte that is not UTF-8 in a text": _RESPONSE.replace("done", "d\udcffne"),
    "a key twice": _RESPONSE.replace('"source"', '"source":"a","source"'),
    "the kind's name twice": _RESPONSE.replace('"kind":{', '"kind":{"type":"ToolCallRequested",'),
}


@pytest.mark.parametrize("text", ODD.values(), ids=ODD.keys())
def test_odd_text_shows_or_is_refused_as_the_whole_event(text: str) -> None:
    assert lean(text, 1) == whole(text, 1)
