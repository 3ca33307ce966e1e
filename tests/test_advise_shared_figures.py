"""Pass two of `advise` (advice/pass_two.py) works out only what its totals read: each call's figures are
tallied once for the group of candidates that share them (`SharedTallies`: the tokens estimated once),
and, when no cache model prices it, a lockstep class's prefix reuse is only whether it breaks (its bytes,
`reuse._c_bytes`, not counted but where the previous call had another Layer A or memory); with a cache
model that reads the reused bytes, they are counted.

The reference is each candidate replayed alone beside the recorded knobs (`compare_profiles`: one
what-if replayer, no lockstep, every call's prefix reuse counted and named, every figure added to each
profile's own tally): every total of each candidate, its costs too, must be the same. The work done is
seen by counting calls of `reuse._c_bytes` and `estimate_tokens` (as `Tally.add` calls it). On main pass two counted the
reused bytes of every class with no price, and estimated each figure once per candidate sharing it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE, cloned_runs, long_run_store
from zymi_tui.context import reuse
from zymi_tui.context.knobs import make_knobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay import figures, tally
from zymi_tui.replay.advice import pass_two
from zymi_tui.replay.compare import compare_profiles, knob_dict, replay_profiles
from zymi_tui.replay.costs import load_prices, parse_prices, pricing
from zymi_tui.replay.figures import recorded_output
from zymi_tui.replay.store_ends import store_ends
from zymi_tui.replay.store_replay import recorded_knobs

# the built-in table with every cache family's minimum at 1 token: the cache model reads small stores' reuse
LOW_MINIMUM = (
    Path(figures.__file__).parent.parent.joinpath("data", "prices.yml").read_text()
    .replace("min_tokens: 1024, step_tokens: 128", "min_tokens: 1, step_tokens: 1")
    .replace("min_tokens: 1024, step_tokens: 1,", "min_tokens: 1, step_tokens: 1,")
)  # fmt: skip
PRICED = {"none": (None, None), "openai": ("low", "gpt-4o-mini"), "claude": ("low", "claude-sonnet-4")}


def _candidates(base: dict[str, Any]) -> list[dict[str, Any]]:
    """Knob sets that render alike for some calls and apart for others (and one that compacts)."""
    return [
        {**base, "observation_window": 1},
        {**base, "observation_window": 2},
        {**base, "observation_window": 2, "soft_cap_chars": base["hard_cap_chars"]},
        {**base, "forget_after_turns": 2},
        {**base, "observation_window": 4, "forget_after_turns": 3},
        {**base, "soft_cap_chars": 6_000, "hard_cap_chars": 400_000},
    ]


Figures = list[dict[str, Any]]


def _run(db: Path, project: Path | None, priced: str) -> tuple[Figures, Figures, dict[str, int]]:
    """Pass two's totals of the candidates, each candidate's replayed alone, and the calls counted in pass two
    (`estimates`: a figure's tokens estimated, with a `CallFigure` or a lockstep class's with none)."""
    table, model = PRICED[priced]
    prices = parse_prices(LOW_MINIMUM, "low") if table else None
    base = recorded_knobs(project)
    tried = [(f"c{i}", make_knobs(k, f"c{i}")) for i, k in enumerate(_candidates(knob_dict(base)))]
    counted = {"c_bytes": 0, "estimates": 0}

    def counting(name: str, real: Any) -> Any:
        def spy(*args: Any) -> Any:
            counted[name] += 1
            return real(*args)

        return spy

    async def main() -> tuple[Figures, Figures]:
        reader = await open_reader(SqliteStore(db))
        try:
            output = await recorded_output(reader)
            how = pricing(prices, model, None)
            alone = []
            ratio = None
            for name, knobs in tried:
                profiles = [("recorded", None), (name, knobs)]
                cmp = await compare_profiles(
                    replay_profiles(reader, project, profiles), profiles, recorded_knobs=base,
                    prices=prices, model=model, output=output,
                )  # fmt: skip
                ratio = cmp.tokens_per_byte
                alone.append(cmp.profiles[1].total.as_dict())
            assert ratio is not None
            job = pass_two.PassTwo(project, tried, base, None, ratio, how, await store_ends(reader))
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(reuse, "_c_bytes", counting("c_bytes", reuse._c_bytes))
                mp.setattr(tally, "estimate_tokens", counting("estimates", figures.estimate_tokens))
                # (a lockstep class's figures, added with no CallFigure: `Tally.add_class`, its tokens so)
                mp.setattr(tally, "tokens_of", counting("estimates", figures.tokens_of))
                totals = await pass_two.in_one(reader, job, output, None)
            return [totals[name].as_dict() for name, _ in tried], alone
        finally:
            await reader.close()

    shared, alone = asyncio.run(main())
    return shared, alone, counted


def _store(shape: str, tmp: Path) -> tuple[Path, Path | None]:
    if shape == "many runs":
        return cloned_runs(tmp, 3), ORACLE / "coding_default" / "project"
    return long_run_store(tmp, 1500), None


@pytest.mark.parametrize("priced", list(PRICED))
@pytest.mark.parametrize("shape", ["many runs", "one long run"])
def test_pass_two_gives_each_candidates_figures_replayed_alone(shape: str, priced: str, tmp_path: Path) -> None:
    db, project = _store(shape, tmp_path)
    shared, alone, _ = _run(db, project, priced)
    assert shared == alone
    assert len({(t["chars_sum"], t["cache_breaks"]) for t in alone}) > 2  # the candidates do differ
    assert any(t["cache_breaks"] for t in alone)
    if priced == "openai":  # the cache model read the reused bytes: a wrong count would show in its reads
        assert all(t["cached_tokens_modelled"] > 0 for t in alone)


@pytest.mark.parametrize("shape", ["many runs", "one long run"])
def test_pass_two_counts_reused_bytes_only_for_a_cache_model_that_reads_them(shape: str, tmp_path: Path) -> None:
    db, project = _store(shape, tmp_path)
    counts = {priced: _run(db, project, priced)[2]["c_bytes"] for priced in PRICED}
    # counted only where the previous call had another Layer A or memory (the whole `prefix_reuse` is
    # asked then: a few calls, none on many runs); an explicit family without breakpoints reads no reuse
    assert counts["none"] * 10 < counts["openai"]
    assert counts["claude"] == counts["none"]


@pytest.mark.parametrize("shape", ["many runs", "one long run"])
def test_each_shared_figure_is_estimated_once(shape: str, tmp_path: Path) -> None:
    """With no cache model, a figure the candidates of a class share is estimated (and added) once: fewer
    estimates than candidates' calls; with one (its state is each candidate's), once a candidate."""
    db, project = _store(shape, tmp_path)
    shared, _, counted = _run(db, project, "none")
    calls = sum(t["calls"] + t["hard_cap_failures"] for t in shared)
    assert counted["estimates"] < calls * 0.9
    priced, _, per_candidate = _run(db, project, "openai")
    assert per_candidate["estimates"] == sum(t["calls"] + t["hard_cap_failures"] for t in priced)


def test_the_low_minimum_table_differs_from_the_built_in_one() -> None:
    low = parse_prices(LOW_MINIMUM, "low")
    assert low.cache_family("gpt-4o-mini", None) != load_prices().cache_family("gpt-4o-mini", None)
    assert low.cache_family("claude-sonnet-4", None) != load_prices().cache_family("claude-sonnet-4", None)
