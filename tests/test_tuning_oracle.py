"""Tuning figures against what the real zymi engine recorded (tests/oracle): the store's own
calls and request bodies are the answer key, never our own output."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ORACLE, SCENARIOS
from zymi_tui.context.knobs import PROFILES, ContextKnobs, project_knobs
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.project.reader import read_project
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.compare import compare_profiles, knob_dict, replay_profiles
from zymi_tui.replay.figures import recorded_output
from zymi_tui.replay.presence import FULL, MASKED, NOT_YET, presence
from zymi_tui.replay.rent import observation_rent
from zymi_tui.replay.store_replay import replay_store


def expected(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((ORACLE / name / "expected.json").read_text())
    return data


def requests(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ORACLE / name / "requests.jsonl").read_text().splitlines() if line.strip()]


def sql(name: str, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{ORACLE / name / 'events.db'}?mode=ro", uri=True) as db:
        return db.execute(query).fetchall()


async def open_oracle(name: str) -> SqliteReader:
    return await SqliteReader.open(str(ORACLE / name / "events.db"))


def replayer(reader: SqliteReader, project: Path, streams: list[str] | None = None) -> Any:
    def replay(knobs: dict[str, int | None] | None) -> AsyncIterator[CallContext]:
        ck = None if knobs is None else ContextKnobs(**knobs)  # type: ignore[arg-type]
        return replay_store(reader, project=project, knobs=ck, streams=streams)

    return replay


@pytest.mark.parametrize("name", SCENARIOS)
async def test_recorded_knobs_reproduce_every_recorded_figure(name: str) -> None:
    project = ORACLE / name / "project"
    doc = yaml.safe_load((project / "project.yml").read_text()) or {}
    soft = ((doc.get("runtime") or {}).get("context") or {}).get("soft_cap_chars", 400_000)  # engine default
    exp = expected(name)
    failures = [e for e in json.loads((ORACLE / name / "context_events.json").read_text()) if "hard_cap_exceeded" in e]
    usage = [json.loads(d)["kind"]["data"].get("usage") for (d,) in sql(name, "select data from events where "
             "kind_tag='llm_call_completed' order by id")]  # fmt: skip
    reader = await open_oracle(name)
    try:
        own = project_knobs(read_project(project))
        profiles: list[tuple[str, ContextKnobs | None]] = [("recorded", None), ("same, by value", own)]
        cmp = await compare_profiles(
            replay_profiles(reader, project, profiles), profiles, recorded_knobs=own,
            output=await recorded_output(reader),
        )  # fmt: skip
    finally:
        await reader.close()
    agent = [e for e in exp if e["iteration"] > 0]
    for p in cmp.profiles:
        t = p.total
        assert p.recorded
        assert t.calls == len(exp)
        assert t.compactions_recorded == len(exp) - len(agent)
        assert t.compactions_simulated == 0
        assert t.chars_sum == sum(e["approx_context_chars"] for e in exp)
        assert t.chars_peak == max(e["approx_context_chars"] for e in agent)
        assert t.over_soft_cap == sum(e["approx_context_chars"] > soft for e in agent)
        assert t.hard_cap_failures == len(failures)
        assert t.tokens_sum == sum(u["input_tokens"] for u in usage if u)
        assert t.provenance == "recorded" and t.tokens_estimated == 0


async def test_rent_matches_the_request_bodies() -> None:
    name = "coding_default"
    stream = expected(name)[0]["stream_id"]
    # answer key: per tool_call_id, bytes resent in full over all agent requests (not masked placeholders)
    rent: dict[str, int] = {}
    calls_full: dict[str, int] = {}
    for req in requests(name):
        for m in req["body"]["messages"]:
            if m["role"] == "tool" and not m["content"].startswith("[masked:"):
                rent[m["tool_call_id"]] = rent.get(m["tool_call_id"], 0) + len(m["content"].encode())
                calls_full[m["tool_call_id"]] = calls_full.get(m["tool_call_id"], 0) + 1
    reader = await open_oracle(name)
    try:
        project = ORACLE / name / "project"
        got = await observation_rent(replayer(reader, project, [stream]), stream, window=4,
                                     base=knob_dict(ContextKnobs()))  # fmt: skip
    finally:
        await reader.close()
    by_id = {o.call_id: o for o in got.observations}
    assert {k: o.rent_bytes for k, o in by_id.items()} == rent
    assert {k: o.calls_full for k, o in by_id.items()} == calls_full
    assert got.chars_total == sum(e["approx_context_chars"] for e in expected(name))
    # a smaller window can only save: each observation's what-if rent is at most its recorded rent
    assert all(o.saved_bytes is not None and o.saved_bytes >= 0 for o in got.observations)
    assert got.chars_total_what_if is not None and got.chars_total_what_if < got.chars_total
    ranked = got.ranked()
    assert ranked[0].rent_bytes == max(rent.values())


async def test_presence_matches_the_request_bodies() -> None:
    name = "coding_default"
    needle = "def f_0_0(x)"
    stream = expected(name)[0]["stream_id"]
    [(tool_seq,)] = sql(
        name, f"select sequence from events where kind_tag='tool_call_completed' and data like '%{needle}%'"
    )
    reqs = requests(name)
    want = []
    for e in expected(name):
        body = reqs[e["request_n"] - 1]["body"]["messages"]
        if any(needle in (m.get("content") or "") for m in body):
            want.append((e["sequence"], FULL))
        elif e["sequence"] < tool_seq:
            want.append((e["sequence"], NOT_YET))
        else:
            want.append((e["sequence"], MASKED))
    reader = await open_oracle(name)
    try:
        project = ORACLE / name / "project"
        calls = [c async for c in replay_store(reader, project=project, streams=[stream])]
        events = await reader.read_stream(stream)
    finally:
        await reader.close()
    got = presence(calls, events, needle, knob_dict(ContextKnobs()))
    assert [(p.sequence, p.status) for p in got] == want
    assert {s for _, s in want} == {FULL, MASKED, NOT_YET}
    assert all("observation_window=10" in p.why for p in got if p.status == MASKED)


async def test_chat_profile_on_coding_store_only_shrinks_contexts() -> None:
    """Masking at window 2 and forgetting can only remove bytes from a call that had no compaction."""
    name = "coding_default"
    reader = await open_oracle(name)
    try:
        project = ORACLE / name / "project"
        profiles: list[tuple[str, ContextKnobs | None]] = [("recorded", None), ("chat", PROFILES["chat"])]
        cmp = await compare_profiles(
            replay_profiles(reader, project, profiles), profiles, recorded_knobs=ContextKnobs(),
        )  # fmt: skip
    finally:
        await reader.close()
    rec, chat = cmp.profiles
    rec_chars = {(f.stream_id, f.sequence): f.chars for f in rec.calls}
    assert all(f.chars <= rec_chars[(f.stream_id, f.sequence)] for f in chat.calls if f.kind == "agent")
    assert chat.total.chars_sum < rec.total.chars_sum
    assert chat.total.provenance == "estimated"
