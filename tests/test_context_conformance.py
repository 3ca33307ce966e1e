"""The context engine against the real zymi 0.9.3 engine: every recorded request, compaction and failure.

Answer keys are the oracle files recorded from the real engine (requests.jsonl: the bodies it sent;
expected.json: each LlmCallStarted; context_events.json: its compactions and the hard-cap error).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE, SCENARIOS, copy_store
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay import CallContext, replay_store


def _norm(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str) and content.startswith("[memory]\n"):
            content = sorted(content.split("\n"))  # zymi writes memory lines in HashMap order
        calls = [
            (c["id"], c["type"], c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []
        ]
        out.append((m["role"], json.dumps(content, ensure_ascii=False), calls, m.get("tool_call_id")))
    return out


async def _replay(name: str, tmp_path: Path) -> list[CallContext]:
    db = copy_store(ORACLE / name / "events.db", tmp_path / name)
    reader = await SqliteReader.open(db)
    try:
        return [row async for row in replay_store(reader, project=ORACLE / name / "project")]
    finally:
        await reader.close()


@pytest.mark.parametrize("name", SCENARIOS)
async def test_every_request_body_is_rebuilt(name: str, tmp_path: Path) -> None:
    rows = await _replay(name, tmp_path)
    by_call = {(r.stream_id, r.sequence): r for r in rows if not r.hard_cap_failure}
    expected = json.loads((ORACLE / name / "expected.json").read_text())
    requests = [json.loads(line) for line in (ORACLE / name / "requests.jsonl").read_text().splitlines() if line]
    assert len(by_call) == len(expected)
    for call in expected:
        row = by_call[(call["stream_id"], call["sequence"])]
        assert row.rendered is not None
        where = f"{name} {call['stream_id']} seq {call['sequence']}"
        assert (row.rendered.chars, row.rendered.message_count) == (
            call["approx_context_chars"],
            call["message_count"],
        ), where
        assert row.is_compaction == (call["iteration"] == 0), where
        body = requests[call["request_n"] - 1]["body"]
        assert _norm(row.rendered.wire()) == _norm(body["messages"]), where


@pytest.mark.parametrize("name", [s for s in SCENARIOS if s in ("coding_compaction", "chat_profile", "hard_cap")])
async def test_compaction_ranges_and_bytes_saved(name: str, tmp_path: Path) -> None:
    rows = await _replay(name, tmp_path)
    events = json.loads((ORACLE / name / "context_events.json").read_text())
    compacted = [e for e in events if e["kind_tag"] == "context_compacted"]
    assert compacted
    for e in compacted:
        calls = [r for r in rows if r.is_compaction and r.stream_id == e["stream_id"] and r.sequence < e["sequence"]]
        plan = calls[-1].compaction_plan
        assert plan is not None
        assert list(plan.replaces_seq_range) == e["data"]["replaces_seq_range"]
        assert plan.span_bytes - len(e["data"]["summary"].encode()) == e["data"]["bytes_saved"]


async def test_hard_cap_failure_is_reproduced(tmp_path: Path) -> None:
    rows = await _replay("hard_cap", tmp_path)
    events = json.loads((ORACLE / "hard_cap" / "context_events.json").read_text())
    recorded = next(e["hard_cap_exceeded"] for e in events if "hard_cap_exceeded" in e)
    failures = [r for r in rows if r.hard_cap_failure]
    assert len(failures) == 1
    rendered = failures[0].rendered
    assert rendered is not None and rendered.hard_cap_exceeded
    assert rendered.chars == recorded["total_chars"] == failures[0].recorded_chars
    assert rendered.knobs.hard_cap_chars == recorded["hard_cap"]
