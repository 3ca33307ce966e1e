"""The message-life model against `observation_rent` (which walks every call's message list): calls
in full, calls masked and rent of every tool result, on every recorded scenario."""

from __future__ import annotations

import pytest

from tests.conftest import ORACLE, SCENARIOS
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay.calls import replay_store
from zymi_tui.replay.life import FULL, MASKED, MessageLife
from zymi_tui.replay.rent import observation_rent


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
