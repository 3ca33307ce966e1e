"""The figures-only rendering (`splice.figures_as`, what `advise`'s pass two and `compare` take of a build
under each what-if knob set replayed in lockstep) against the full rendering of the same build: the
context `rendered_as` makes, its messages made one by one (their count and bytes, `context_entries`), and
the build itself under those knobs (`rerender`, what `build(knobs=...)` gives), on hostile stores (markup,
terminal escapes, a 5 MB tool result), the long sample run and the oracle's scenarios. Planted breaks of
each figure are shown to be caught."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE, SCENARIOS
from tests.hostile_stores import make_store_sync
from zymi_tui.context.knobs import ContextKnobs, make_knobs
from zymi_tui.context.rendered import RenderedContext, Shape
from zymi_tui.context.splice import Ends, Rendering, bounds, figures_as, layer_c_bytes, rendered_as, rerender
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay.store_replay import recorded_knobs, replay_store

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ("markup", "escapes", "huge_result")
Figures = Callable[[RenderedContext, ContextKnobs, int, int, int], Rendering]


def _knob_sets(base: ContextKnobs) -> list[ContextKnobs]:
    """What-if sets around the recorded knobs: windows, forget, and hard caps low enough to be exceeded."""
    current: dict[str, Any] = {
        "observation_window": base.observation_window, "soft_cap_chars": base.soft_cap_chars,
        "hard_cap_chars": base.hard_cap_chars, "min_tail_turns": base.min_tail_turns,
        "forget_after_turns": base.forget_after_turns,
    }  # fmt: skip
    changes: list[dict[str, Any]] = [{"observation_window": w} for w in (1, 2, 5, 64)]
    changes += [{"forget_after_turns": f} for f in (1, 2, 4)]
    changes += [{"observation_window": 1, "forget_after_turns": 2}]
    for cap in (500, 2_000, 8_000):
        changes.append({"hard_cap_chars": cap, "soft_cap_chars": cap})
    return [make_knobs({**current, **c}, f"test {i}") for i, c in enumerate(changes)]


def _entries_figures(ctx: RenderedContext) -> tuple[int, int]:
    """A context's message count and bytes, from its messages made one by one."""
    return len(ctx.entries), sum(e.bytes for e in ctx.entries)


async def _builds(db: Path, project: Path | None) -> list[RenderedContext]:
    """Every built context (with a shape, no compaction plan) of the store replayed under its knobs."""
    reader = await open_reader(SqliteStore(db))
    try:
        return [
            row.rendered
            async for row in replay_store(reader, project=project)
            if row.rendered is not None and row.rendered.shape is not None and row.rendered.compaction is None
        ]
    finally:
        await reader.close()


def _mismatches(db: Path, project: Path | None, figures: Figures) -> tuple[int, list[str]]:
    """How many (build, knob set) pairs were compared, and where `figures` differs from the full rendering."""
    knob_sets = _knob_sets(recorded_knobs(project))
    compared, out = 0, []
    for ctx in asyncio.run(_builds(db, project)):
        shape = ctx.shape
        assert shape is not None
        tail, n = shape.tail, shape.n
        n_turns = bisect.bisect_left(tail.turn_starts, n)
        ends = Ends(tail.turn_ends, n_turns, n)
        masked, full = tail.cum_masked, tail.cum_full
        for k in knob_sets:
            _, cut, mask_end = bounds(k, n_turns, ends)
            c_bytes = layer_c_bytes(masked[cut], masked[mask_end], full[mask_end], full[n])
            got = figures(ctx, k, cut, mask_end, c_bytes)
            ref = rendered_as(ctx, k, cut, mask_end, c_bytes)
            built = rerender(ctx, k)
            assert built is not None
            count, nbytes = _entries_figures(ref)
            want: tuple[int, int, bool, Shape | None] = (ref.chars, ref.message_count, ref.hard_cap_exceeded, ref.shape)
            checks = [
                ("rendered_as", want),
                ("its messages", (nbytes, count, nbytes > k.hard_cap_chars, ref.shape)),
                ("the build", (built.chars, built.message_count, built.hard_cap_exceeded, built.shape)),
            ]
            compared += 1
            for what, (chars, messages, over, shape_want) in checks:
                seen = (got.chars, got.message_count, got.hard_cap_exceeded, got.shape)
                if seen != (chars, messages, over, shape_want):
                    out.append(f"seq n={n} {k.describe()}: {got[:3]} vs {what} {(chars, messages, over)}")
    return compared, out


def _stores(tmp: Path) -> list[tuple[Path, Path | None]]:
    out: list[tuple[Path, Path | None]] = [make_store_sync(name, tmp / name) for name in HOSTILE]
    long_run = ROOT / "sample_stores" / "coding_long"
    out.append((long_run / "events.db", long_run / "project"))
    out += [(ORACLE / s / "events.db", ORACLE / s / "project") for s in SCENARIOS]
    return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, Path | None]]:
    return _stores(tmp_path_factory.mktemp("figures_as"))


def test_figures_as_is_the_full_rendering(stores: list[tuple[Path, Path | None]]) -> None:
    total = 0
    for db, project in stores:
        compared, bad = _mismatches(db, project, figures_as)
        assert not bad, f"{db.parent.name}: {len(bad)} of {compared}, first: {bad[:3]}"
        assert compared > 0, db
        total += compared
    assert total > 1_000  # (the long sample run alone has hundreds of builds)


def _without_forgotten(ctx: RenderedContext, k: ContextKnobs, cut: int, mask_end: int, c_bytes: int) -> Rendering:
    r = figures_as(ctx, k, cut, mask_end, c_bytes)
    return r._replace(message_count=ctx.message_count - cut)


def _without_memory(ctx: RenderedContext, k: ContextKnobs, cut: int, mask_end: int, c_bytes: int) -> Rendering:
    r = figures_as(ctx, k, cut, mask_end, c_bytes)
    chars = r.chars - ctx.layer_bytes["B"]
    return r._replace(chars=chars, hard_cap_exceeded=chars > k.hard_cap_chars)


def _soft_cap_for_hard(ctx: RenderedContext, k: ContextKnobs, cut: int, mask_end: int, c_bytes: int) -> Rendering:
    r = figures_as(ctx, k, cut, mask_end, c_bytes)
    return r._replace(hard_cap_exceeded=r.chars > k.soft_cap_chars * 2)


def _own_cut(ctx: RenderedContext, k: ContextKnobs, cut: int, mask_end: int, c_bytes: int) -> Rendering:
    assert ctx.shape is not None
    return figures_as(ctx, k, ctx.shape.cut, mask_end, c_bytes)


@pytest.mark.parametrize("broken", [_without_forgotten, _without_memory, _soft_cap_for_hard, _own_cut])
def test_a_broken_figure_is_caught(stores: list[tuple[Path, Path | None]], broken: Figures) -> None:
    assert any(_mismatches(db, project, broken)[1] for db, project in stores)
