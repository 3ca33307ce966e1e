"""What-if re-rendering over recorded stores: recorded compactions reused while they apply, simulated otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ORACLE, copy_store
from zymi_tui.cli import main
from zymi_tui.context.knobs import ContextKnobs, project_knobs
from zymi_tui.context.masking import message_bytes
from zymi_tui.events.messages import message_text
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.project.reader import read_project
from zymi_tui.replay import CallContext, context_at, replay_store


async def _replay(name: str, tmp_path: Path, knobs: ContextKnobs | None) -> list[CallContext]:
    db = copy_store(ORACLE / name / "events.db", tmp_path / name)
    reader = await SqliteReader.open(db)
    try:
        return [row async for row in replay_store(reader, project=ORACLE / name / "project", knobs=knobs)]
    finally:
        await reader.close()


def _expected(name: str) -> dict[tuple[str, int], dict[str, int]]:
    return {(e["stream_id"], e["sequence"]): e for e in json.loads((ORACLE / name / "expected.json").read_text())}


async def test_recorded_compactions_are_reused_while_they_apply(tmp_path: Path) -> None:
    # only the hard cap moves: every compaction decision is the recorded one, so every call is the recorded one
    knobs = project_knobs(read_project(ORACLE / "coding_compaction" / "project")).replaced(hard_cap_chars=50_000)
    rows = await _replay("coding_compaction", tmp_path, knobs)
    expected = _expected("coding_compaction")
    agent = [r for r in rows if not r.is_compaction]
    assert all(r.whatif for r in rows) and not any(r.simulated for r in rows)
    assert len([r for r in rows if r.is_compaction]) == 12
    for r in agent:
        assert r.rendered is not None
        e = expected[(r.stream_id, r.sequence)]
        assert (r.rendered.chars, r.rendered.message_count) == (e["approx_context_chars"], e["message_count"])


async def test_new_compactions_are_simulated_and_marked(tmp_path: Path) -> None:
    rows = await _replay("coding_default", tmp_path, ContextKnobs(soft_cap_chars=20_000, hard_cap_chars=600_000))
    expected = _expected("coding_default")
    simulated = [r for r in rows if r.simulated]
    assert simulated, "a 20000-byte soft cap must compact coding_default (recorded peak is far above it)"
    assert all("assumed ratio 10%" in r.note for r in simulated)  # no recorded summary in this store
    after = next(r for r in rows if not r.is_compaction and r.sequence == simulated[0].sequence)
    assert after.rendered is not None
    summary = [e for e in after.rendered.entries if e.simulated and e.message.role == "system"]
    assert summary and summary[0].message.content.startswith("[compacted history]\n[simulated summary")  # type: ignore[union-attr]
    assert after.rendered.chars < expected[(after.stream_id, after.sequence)]["approx_context_chars"]
    assert after.rendered.chars == sum(e.bytes for e in after.rendered.entries)


async def test_hard_cap_under_other_knobs(tmp_path: Path) -> None:
    project = project_knobs(read_project(ORACLE / "hard_cap" / "project"))
    rows = await _replay("hard_cap", tmp_path, project.replaced(hard_cap_chars=10**8))
    failure = next(r for r in rows if r.hard_cap_failure)
    assert failure.rendered is not None and not failure.rendered.hard_cap_exceeded
    assert (failure.rendered.chars, failure.recorded_chars) == (6629, 6629)
    rows = await _replay("coding_default", tmp_path / "b", ContextKnobs(soft_cap_chars=5000, hard_cap_chars=5000))
    assert any(r.rendered is not None and r.rendered.hard_cap_exceeded for r in rows if not r.is_compaction)


def test_cli_recorded_knobs_are_not_a_whatif(capsys: pytest.CaptureFixture[str]) -> None:
    db, project = ORACLE / "chat_profile" / "events.db", ORACLE / "chat_profile" / "project"
    assert main(["replay", str(db), "--project", str(project), "--profile", "chat", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert not any(r.get("whatif") for r in rows[:-1]) and "note" not in rows[-1]
    assert main(["replay", str(db), "--project", str(project), "--set", "observation_window=5", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(r["whatif"] for r in rows[:-1]) and "same trajectory" in rows[-1]["note"]


async def test_context_at_one_call_matches_the_request(tmp_path: Path) -> None:
    db = copy_store(ORACLE / "fresh_mode" / "events.db", tmp_path)
    reader = await SqliteReader.open(db)
    try:
        row = await context_at(reader, "chat-fresh:step:retrieve", 11, project=ORACLE / "fresh_mode" / "project")
    finally:
        await reader.close()
    assert row.rendered is not None
    assert (row.rendered.chars, row.rendered.message_count) == (163, 2)  # expected.json: run 2, fresh: no tail
    assert row.recorded_input_tokens is not None


async def test_context_at_under_whatif_is_the_agent_call(tmp_path: Path) -> None:
    db = copy_store(ORACLE / "coding_compaction" / "events.db", tmp_path)
    stream = "pipeline-main-05197cdd-3c27-4274-acb1-5071e1424dc7:step:work"
    reader = await SqliteReader.open(db)
    try:
        knobs = ContextKnobs(soft_cap_chars=20_000, hard_cap_chars=30_000)
        row = await context_at(reader, stream, 109, project=ORACLE / "coding_compaction" / "project", knobs=knobs)
    finally:
        await reader.close()
    assert row.whatif and not row.is_compaction and row.iteration == 19
    assert row.rendered is not None and row.rendered.chars == sum(e.bytes for e in row.rendered.entries)


async def test_a_compactions_span_bytes_are_its_messages_as_shown(tmp_path: Path) -> None:
    """bytes_saved counts the span as sent to the summariser: a later compaction's span holds an
    earlier simulated summary, whose size estimate is not the bytes of its placeholder text."""
    rows = await _replay("coding_default", tmp_path, ContextKnobs(soft_cap_chars=20_000, hard_cap_chars=600_000))
    plans = [r.compaction_plan for r in rows if r.is_compaction and r.compaction_plan is not None]
    assert len(plans) >= 2
    holding = [p for p in plans if any("[simulated summary" in message_text(m) for m in p.span)]
    assert holding, "a later compaction's span holds an earlier simulated summary"
    for plan in plans:
        assert plan.span_bytes == sum(message_bytes(m) for m in plan.span)
