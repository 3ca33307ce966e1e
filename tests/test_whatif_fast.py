"""The knob editor's what-if (`StreamWhatIf.run`: calls before the first compaction re-rendered from
one kept base replay, the rest replayed from a fork of it) equals the full replay (`replay_store`,
straight from the store: the path the conformance tests hold to the real engine) under many knob
sets, on every recorded oracle store and on a generated long run: every row, its figures, and the
messages of its context."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.make_long_run import write_clones
from tests.conftest import ORACLE, SCENARIOS
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.rendered import ContextEntry
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.messages import to_wire
from zymi_tui.events.store import STEP_MARK
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_replay import recorded_knobs, replay_store
from zymi_tui.tui.tuning.memory_reader import load_run
from zymi_tui.tui.tuning.whatif import FOLLOWED, StreamWhatIf


def entry(e: ContextEntry) -> tuple[Any, ...]:
    return (e.layer, e.bytes, e.reason, e.source_seq, e.simulated, to_wire(e.message))


def figures(c: CallContext, with_messages: bool) -> tuple[Any, ...]:
    r = c.rendered
    context: tuple[Any, ...] = ()
    if r is not None:
        context = (r.chars, r.message_count, r.hard_cap_exceeded, r.layer_bytes, r.forgotten,
                   r.dropped_by_fresh, r.compacted_away, r.prefix_inferred)  # fmt: skip
        if with_messages:
            context += (tuple(map(entry, r.entries)), tuple(map(entry, r.dropped)))
    plan = c.compaction_plan
    return (
        c.stream_id, c.sequence, c.global_id, c.iteration, c.is_compaction, c.simulated, c.hard_cap_failure,
        c.whatif, c.recorded_chars, c.recorded_message_count, c.recorded_input_tokens, c.recorded_output_tokens,
        c.finish_reason, c.note, c.prefix_inferred,
        None if plan is None else (plan.replaces_seq_range, plan.span_bytes, plan.turns, plan.request_chars),
        context,
    )  # fmt: skip


def knob_sets(rng: random.Random, recorded: ContextKnobs, sizes: list[int], n: int) -> list[ContextKnobs]:
    """Knob sets around the stream's own sizes (`sizes`: its calls' recorded totals): soft caps from a
    tenth of its peak (compactions early and often) to above it (none), windows and tails from 0, forget
    off or short; and as many on the edges: caps equal to a call's total, window and tail 0, forget 0-2."""
    peak = max(sizes)
    out = []
    for _ in range(n):
        soft = rng.choice(sizes)
        out.append(
            ContextKnobs(
                observation_window=rng.choice([0, recorded.observation_window]),
                soft_cap_chars=soft,
                hard_cap_chars=rng.choice([soft, rng.choice([s for s in sizes if s >= soft])]),
                min_tail_turns=rng.choice([0, 0, 1, recorded.min_tail_turns]),
                forget_after_turns=rng.choice([None, 0, 1, 2]),
            )
        )
    for _ in range(n):
        soft = rng.choice([recorded.soft_cap_chars, rng.randint(max(1, peak // 10), max(2, 2 * peak))])
        out.append(
            ContextKnobs(
                observation_window=rng.randint(0, 12),
                soft_cap_chars=soft,
                hard_cap_chars=soft + rng.choice([0, rng.randint(0, max(1, peak))]),
                min_tail_turns=rng.randint(0, 5),
                forget_after_turns=rng.choice([None, None, rng.randint(0, 8)]),
            )
        )
    return out


async def full_replay(db: Path, project: Path, stream: str, knobs: ContextKnobs) -> list[CallContext]:
    reader = await open_reader(SqliteStore(db))
    try:
        return [c async for c in replay_store(reader, project=project, knobs=knobs, streams=[stream])]
    finally:
        await reader.close()


async def check_store(db: Path, project: Path, n_knobs: int, seed: int, every: int = 1) -> Counter[str]:
    """Each step stream with agent calls, 2 x `n_knobs` knob sets: the what-if's rows == the full
    replay's (the messages of every `every`-th row and the last). Returns how many knob sets each way
    of the what-if made (`StreamWhatIf.path`, with "+compactions" when the what-if compacts)."""
    rng = random.Random(seed)
    recorded = recorded_knobs(project)
    reader = await open_reader(SqliteStore(db))
    try:
        streams = [s.stream_id for s in await reader.streams() if STEP_MARK in s.stream_id]
        runs = {s: await load_run(reader, s) for s in streams}
    finally:
        await reader.close()
    ways: Counter[str] = Counter()
    for stream in streams:
        base = await full_replay(db, project, stream, recorded)
        sizes = [c.rendered.chars for c in base if c.rendered is not None and not c.is_compaction]
        if not sizes:
            continue
        whatif = StreamWhatIf(runs[stream], project, stream)
        for knobs in knob_sets(rng, recorded, sizes, n_knobs):
            want = await full_replay(db, project, stream, knobs)
            got = whatif.run(knobs)
            assert got is not None
            assert len(got) == len(want), (stream, knobs)
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                deep = i % every == 0 or i == len(want) - 1
                assert figures(g, deep) == figures(w, deep), (stream, knobs, i)
            # one call alone (`call_at`, what the editor makes for the call on screen): the first, a
            # middle and the last agent call, each the full replay's row
            agents = [w for w in want if not w.is_compaction and not w.hard_cap_failure]
            picks = (agents[0], agents[len(agents) // 2], agents[-1]) if agents else ()
            for w in {id(c): c for c in picks}.values():
                alone = whatif.call_at(knobs, w.sequence, within_s=60)
                assert alone is not None and figures(alone, True) == figures(w, True), (stream, knobs, w.sequence)
            if knobs != recorded:
                ways[whatif.path + ("+compactions" if any(c.is_compaction for c in want) else "")] += 1
    return ways


@pytest.mark.parametrize("name", SCENARIOS)
async def test_whatif_equals_the_full_replay_on_the_oracle_stores(name: str) -> None:
    await check_store(ORACLE / name / "events.db", ORACLE / name / "project", n_knobs=24, seed=16)


@pytest.mark.parametrize("name", ["coding_compaction", "fresh_mode"])
async def test_whatif_equals_the_full_replay_on_a_generated_long_run(tmp_path: Path, name: str) -> None:
    db = tmp_path / "long.db"
    write_clones(db, 1500, name)
    ways = await check_store(db, ORACLE / name / "project", n_knobs=10, seed=4, every=25)
    if name == "coding_compaction":  # the figures-only what-if, with compactions and without
        assert ways[FOLLOWED] and ways[FOLLOWED + "+compactions"], ways
