"""The prefix reuse an export's walk gives each call (`CallContext.reuse`, read by `export --format
otel` as `zymi.prefix_reuse.*`) against a reference made from the messages themselves: the leading
messages of the call's wire list equal to the step's previous sent call's, and their bytes (each
entry's). The walk works out the figures only: a Layer C break's cause is left `UNNAMED` (no export
reads it),
and a step's Layer A and memory, when the previous call had the same, are counted once
(`StepState.head`), not compared message by message. The oracle stores cover memory written between
calls, compactions, the fresh mode and the hard cap."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import cast

import pytest

from tests.conftest import ORACLE, SCENARIOS
from tests.test_context_properties import MEMORY, PREFIX, make_stream
from tests.test_reuse_reference import _reference
from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.rendered import RenderedContext
from zymi_tui.context.reuse import UNNAMED
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.replay_view import replay_event
from zymi_tui.replay.call_builds import StepState
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.calls import Replayer
from zymi_tui.telemetry.export_calls import walk


async def _rows(store: str, with_project: bool) -> list[CallContext]:
    project = ORACLE / store / "project" if with_project else None
    rows: list[CallContext] = []
    reader = await open_reader(SqliteStore(ORACLE / store / "events.db"))
    try:
        async for _se, out in walk(reader, project if project and project.exists() else None):
            rows += out
    finally:
        await reader.close()
    return rows


def _checked(store: str, with_project: bool) -> tuple[int, int]:
    """(calls compared with the reference, Layer C breaks among them); asserts each call."""
    prev: dict[str, RenderedContext] = {}  # step stream -> its previous sent call's context
    compared = breaks = 0
    for row in asyncio.run(_rows(store, with_project)):
        r = row.rendered
        if r is None or r.shape is None or row.is_compaction or row.hard_cap_failure:
            continue
        assert row.reuse is not None
        before = prev.get(row.stream_id)
        if before is None:
            assert (row.reuse.messages, row.reuse.chars, row.reuse.broken) == (0, 0, None)
        else:
            assert (row.reuse.messages, row.reuse.chars) == _reference(before, r)[:2], (store, row.sequence)
            compared += 1
            broken = row.reuse.broken
            if broken is not None and broken.layer == "C":  # (a break in Layer A or B is named: no work)
                assert broken.cause == UNNAMED
                breaks += 1
        if not r.hard_cap_exceeded:
            prev[row.stream_id] = r
    return compared, breaks


@pytest.mark.parametrize("store", SCENARIOS)
def test_the_walks_prefix_reuse_is_the_messages_compared(store: str) -> None:
    compared, _ = _checked(store, True)  # (without the project, Layer A is a size the wire does not show)
    assert compared >= 2


def test_a_layer_c_break_is_found_and_left_unnamed() -> None:
    assert _checked("coding_compaction", True)[1] >= 1


def test_a_steps_kept_head_is_let_go_when_its_memory_changes() -> None:
    """Calls whose memory goes M1, M1, M2, M2, M1 (the kept Layer A and memory figures are right only
    for the memory they were made with), against the messages compared."""
    plan = [("turn", f"look {i}", [("read_file", f"a{i}", "x" * 300)], False) for i in range(5)]
    events, calls = make_stream(plan)
    builder = ContextBuilder(ContextKnobs(observation_window=2), PREFIX)
    memories = [MEMORY, MEMORY, [("goal", "y" * 90)], [("goal", "y" * 90)], MEMORY]
    replayer = Replayer(None, ContextKnobs(), ContextKnobs())
    step = StepState(builder)
    fed, prev = 0, None
    for upto, memory in zip(calls, memories, strict=False):
        while fed < upto:
            builder.add(replay_event(events[fed]))
            fed += 1
        row = SimpleNamespace(rendered=builder.build(memory, allow_compaction=False), reuse=None)
        replayer._track_reuse(step, cast(CallContext, row))
        if prev is not None:
            assert (row.reuse.messages, row.reuse.chars) == _reference(prev, row.rendered)[:2]
        prev = row.rendered
    assert fed == calls[4]
