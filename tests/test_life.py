"""The message-life model against `observation_rent` (which walks every call's message list): calls
in full, calls masked and rent of every tool result, on every recorded scenario."""

from __future__ import annotations

import pytest

from tests.conftest import ORACLE, SCENARIOS
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay.life import FULL, MASKED, MessageLife
from zymi_tui.replay.rent import observation_rent
from zymi_tui.replay.store_replay import replay_store


@pytest.mark.parametrize("name", [s for s in SCENARIOS if (ORACLE / s / "project").is_dir()])
async def test_life_matches_observation_rent(name: str) -> None:
    project = ORACLE / name / "project"
    reader = await open_reader(SqliteStore(ORACLE / name / "events.db"))
    try:
        rows = [r async for r in replay_store(reader, project=project)]

        def replay(knobs: object) -> object:
            return replay_store(reader, project=project)

        streams = sorted({r.stream_id for r in rows if not r.is_compaction and r.rendered is not None})
        assert streams
        for stream in streams:
            life = MessageLife.build(stream, rows)
            rent = await observation_rent(replay, stream)  # type: ignore[arg-type]
            for obs in rent.observations:
                row = next(r for r in life.rows if r.seq == obs.source_seq and r.role == "tool")
                assert (row.calls_full, row.calls_masked) == (obs.calls_full, obs.calls_masked)
                assert row.calls_full * row.bytes == obs.rent_bytes
                assert row.rent == obs.rent_bytes  # the grid shows the same rent as `zymi-tui rent`
                cells = [life.state(life.rows.index(row), c) for c in range(len(life.calls))]
                assert (cells.count(FULL), cells.count(MASKED)) == (obs.calls_full, obs.calls_masked)
    finally:
        await reader.close()


@pytest.mark.parametrize("name", [s for s in SCENARIOS if (ORACLE / s / "project").is_dir()])
@pytest.mark.parametrize("profile", [None, "chat"])
async def test_call_diff_accounts_for_every_byte(name: str, profile: str | None) -> None:
    """Added, masked, forgot, compacted and changed add up to the change in approx_context_chars."""
    from zymi_tui.context.knobs import PROFILES
    from zymi_tui.replay.life import call_diff

    reader = await open_reader(SqliteStore(ORACLE / name / "events.db"))
    try:
        knobs = PROFILES[profile] if profile else None
        rows = [r async for r in replay_store(reader, project=ORACLE / name / "project", knobs=knobs)]
    finally:
        await reader.close()
    previous: dict[str, object] = {}
    pairs = 0
    for r in rows:
        if r.is_compaction or r.hard_cap_failure or r.rendered is None or r.rendered.shape is None:
            continue
        prev = previous.get(r.stream_id)
        if prev is not None:
            diff = call_diff(prev.shape, r.rendered.shape)  # type: ignore[attr-defined]
            assert sum(d.bytes for d in diff) == r.rendered.chars - prev.chars  # type: ignore[attr-defined]
            pairs += 1
        previous[r.stream_id] = r.rendered
    assert pairs > 0


@pytest.mark.parametrize("name", [s for s in SCENARIOS if (ORACLE / s / "requests.jsonl").is_file()])
async def test_no_message_is_compacted_away_before_it_was_sent(name: str) -> None:
    """A summary is not shown sent nor compacted away at any call before the first request body that carries
    it (it did not exist: on compaction_masked "2 summary" showed compacted away at calls 2-7)."""
    import json

    from zymi_tui.replay.life import COMPACTED, NOT_YET

    folder = ORACLE / name
    bodies = {}
    for line in (folder / "requests.jsonl").read_text(encoding="utf-8").splitlines():
        req = json.loads(line)
        bodies[req["n"]] = [m.get("content") or "" for m in req["body"]["messages"]]
    sent = {
        (c["stream_id"], c["sequence"]): bodies[c["request_n"]]
        for c in json.loads((folder / "expected.json").read_text(encoding="utf-8"))
        if c["request_kind"] == "agent"
    }
    reader = await open_reader(SqliteStore(folder / "events.db"))
    try:
        rows = [r async for r in replay_store(reader, project=folder / "project")]
    finally:
        await reader.close()
    checked = 0
    for stream in sorted({r.stream_id for r in rows if not r.is_compaction and r.rendered is not None}):
        life = MessageLife.build(stream, rows)
        for i, row in enumerate(life.rows):
            if row.role != "summary":
                continue
            contents = [sent[(stream, c.sequence)] for c in life.calls]
            first = next((k for k, msgs in enumerate(contents) if row.text in msgs), len(contents))
            before = {life.state(i, c) for c in range(first)}
            assert COMPACTED not in before and FULL not in before and MASKED not in before, (row.seq, first, before)
            assert life.state(i, 0) == NOT_YET or first == 0
            checked += 1
    if name in ("coding_compaction", "hard_cap"):
        assert checked > 0
