"""`advise`: the store replayed under the current knobs (pass one: the signals and the baseline), then every
candidate knob set the signals searched, in one more pass (each event decoded once for all of them), each
judged against keeping the current knobs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zymi_tui.context.knobs import ContextKnobs, make_knobs
from zymi_tui.cores import usable_cores
from zymi_tui.events.location import SqliteStore, StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.replay.advice.idle_cores import IdleClock
from zymi_tui.replay.advice.model import (
    Advice,
    Baseline,
    Finding,
    KnobDict,
    Recommendation,
    compactions,
    objective_for,
    profile_name,
    project_facts,
)
from zymi_tui.replay.advice.pass_one import pass_one
from zymi_tui.replay.advice.pass_two import PassTwo, core_free, halves, in_halves, in_one
from zymi_tui.replay.advice.search import effect, rank, settle, verdict
from zymi_tui.replay.advice.signals import (
    Signals,
    ToolBytes,
    chat_under_coding_defaults,
    hard_cap_exceeded,
    hard_cap_near_miss,
    knobs_not_biting,
    negative_bytes_saved,
    runtime_context_unset,
    store_facts,
)
from zymi_tui.replay.advice.signals_cache import anthropic_no_cache, anthropic_system_overwritten, cache_breaks
from zymi_tui.replay.advice.signals_tools import dominant_tool, fresh_mode_candidate, large_tool_result, unused_tools
from zymi_tui.replay.advice.watch import Watch
from zymi_tui.replay.compare import knob_dict
from zymi_tui.replay.costs import PriceTable, pricing
from zymi_tui.replay.figures import RecordedOutput, Totals
from zymi_tui.replay.store_ends import store_ends
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.replay.sweep_pool import replay_on_pool
from zymi_tui.replay.whatifs import WHATIF_POOL_MIN_EVENTS

# processes replaying the candidates unless `--workers` says otherwise: this one. At a million events
# (main at 0e2a4f4, load 5-8 on 2 cores, /tmp/advise37/m1.py) one worker took 70 s CPU and 200 s wall on
# long_1m where the pool of 2 took 92 s CPU and 278 s wall (session 14: 68 vs 97 s CPU, the pool twice
# as slow in wall time at load 17-24): the pool decodes the store again in each worker, and on a shared
# machine its second core is not free
ADVISE_WORKERS = 1

DETECTORS = (
    hard_cap_exceeded,
    hard_cap_near_miss,
    knobs_not_biting,
    negative_bytes_saved,
    chat_under_coding_defaults,
    runtime_context_unset,
    dominant_tool,
    large_tool_result,
    cache_breaks,
    anthropic_no_cache,
    anthropic_system_overwritten,
    fresh_mode_candidate,
    unused_tools,
)


def baseline_of(t: Totals, value: float) -> Baseline:
    def money(c: Any) -> float | None:
        return None if c is None else round(c.total, 6)

    return Baseline(
        agent_calls=t.agent_calls,
        calls=t.calls,
        tokens_sum=t.tokens_sum,
        tokens_provenance=t.provenance,
        chars_sum=t.chars_sum,
        chars_peak=t.chars_peak,
        compactions=compactions(t),
        hard_cap_failures=t.hard_cap_failures,
        cache_breaks=t.cache_breaks,
        objective_value=round(value, 6),
        cost_with_cache=money(t.cost_with_cache),
        cost_recorded_cache=money(t.cost_recorded_cache),
        cached_tokens_recorded=t.cached_tokens_recorded,
        cache_creation_tokens_recorded=t.cache_creation_tokens_recorded,
    )


async def advise(
    reader: EventReader,
    project: Path | None,
    *,
    prices: PriceTable | None = None,
    model: str | None = None,
    tool_bytes: ToolBytes | None = None,
    streams: Sequence[str] | None = None,
    location: StoreLocation | None = None,
    workers: int | None = None,
    split: bool = False,
) -> Advice:
    """Read the store, replay it under the current knobs, detect the signals, and replay every candidate
    they search (two passes over the store); keep what beats the current knobs on the objective.

    Pass one (`pass_one`) shows each call to the detectors (`Watch`) and keeps none. With the store's
    `location` and more than one worker asked for (`workers`; by default ADVISE_WORKERS, this process),
    the candidates are replayed on a process pool (`replay_on_pool`: the store's ranges shared among the
    workers, each decoding its own) and pass one keeps nothing of the store; otherwise in this process (in
    lockstep, `replay/lockstep.py`), from pass one's events kept decoded, or from WHATIF_POOL_MIN_EVENTS
    events set down in a temporary file by pass one (`SpilledEvents`: memory stays flat, the store is not
    read and decoded again). With `split` (a process of its own: it may fork), no `workers` asked for and
    two cores, pass two is split between this process and a forked child (`pass_two`: by range, or below
    that size one long run's candidates while a core is free), each from pass one's events, kept or set
    down in a file (or, where the file failed, each reading its half from the store); from that size, with `split` and
    two cores, while a core is free (`core_free`: idle before pass one), pass one's tokens per byte are
    summed by a forked child while pass one replays, where a cache model prices the calls (without one,
    pass one sums them from the events it decodes: `pass_one`)."""
    early = IdleClock.started()  # (over what comes before pass one: whether a child would have a core)
    base = recorded_knobs(project)
    kd = knob_dict(base)
    facts = project_facts(project)
    model = model or facts.model
    output = RecordedOutput()  # counted by pass one, from the completions it decodes (not in a pass of its own)
    ends = await store_ends(reader)  # one reading of where the streams end, for every replay of both passes
    watch = Watch(reader, ends.ends, base.hard_cap_chars, base.soft_cap_chars, facts)
    last_global_id = await reader.max_global_id()
    asked, workers = workers, ADVISE_WORKERS if workers is None else workers
    pooled = location is not None and workers > 1
    common: dict[str, Any] = {
        "recorded_knobs": base,
        "prices": prices,
        "model": model,
        "provider": facts.provider,
        "output": output,
    }
    family = prices.cache_family(model, "anthropic") if prices is not None and facts.provider == "anthropic" else None
    # below the pool's size pass one keeps its decoded events for pass two; from it, pass two reads the
    # store again (on the pool, or here with one worker), so that memory stays flat
    keep = not pooled and last_global_id < WHATIF_POOL_MIN_EVENTS
    bp, clock = family[1] if family else None, IdleClock.started()
    # (pass one's tokens per byte, from the store's recorded calls, worked out by a forked child meanwhile,
    # while a core is free: on a busy machine it would only add the fork's cost; with a cache model only)
    forks = split and asked is None and location is not None and usable_cores() >= 2 and not keep and not pooled
    sums_from = location if forks and core_free(early.idle_cores()) else None
    one = await pass_one(
        reader, project, streams, watch, common, keep=keep, breakpoints=bp, ends=ends, sums_from=sums_from,
        spill=not keep and not pooled,  # (pass one's events set down in a temporary file for pass two)
        spill_in=location.path.parent if isinstance(location, SqliteStore) else None,
    )  # fmt: skip
    idle = clock.idle_cores()  # (over pass one: whether a forked child would have a core of its own)
    cmp0 = one.cmp
    signals = Signals(watch, cmp0, base, facts, await store_facts(reader), tool_bytes, prices, one.breakpoints)
    findings = [f for detect in DETECTORS for f in detect(signals)]
    candidates: dict[str, KnobDict] = {}
    for f in findings:
        for k in f.recommendation.candidates if f.recommendation else []:
            candidates.setdefault(profile_name(k), k)
    before = cmp0.profiles[0].total
    how = pricing(prices, model, facts.provider)
    job = PassTwo(project, _tried(candidates), base, streams, cmp0.tokens_per_byte, how, ends)
    decoded = one.decoded if keep else one.spilled  # (kept, set down in a file, or neither: the store again)
    try:
        totals: dict[str, Totals] | None = None
        if pooled and candidates:
            assert location is not None
            on_pool = (location, project, candidates, streams, common, one.sums, last_global_id, workers)
            totals = await _candidates_on_pool(*on_pool)
        elif split and asked is None and location is not None and candidates and in_halves(last_global_id):
            totals = await halves(reader, location, job, output, decoded, idle)
        if totals is None:
            totals = await in_one(reader, job, output, decoded) if candidates else {}
    finally:
        if one.spilled is not None:
            one.spilled.close()
    obj = objective_for(before, prices.currency if prices is not None else "USD")
    for f in findings:
        rec = f.recommendation
        if rec is not None and rec.candidates:
            settle(rec, obj, before, totals)
    found = prices.price_for(model) if prices is not None else None
    advice = Advice(
        findings,
        kd,
        model,
        found[0] if found else None,
        cmp0.cache_family,
        before.agent_calls,
        objective=obj,
        baseline=baseline_of(before, obj.value(before)),
        best=_best(findings, candidates, totals, before, obj),
        tried=len(candidates),
    )
    advice.caveat += foreign_caveat(watch.foreign, watch.foreign_rewritten)
    return advice


def foreign_caveat(foreign: int, rewritten: int) -> str:
    """What the figures mean for a foreign agent's calls (spans: docs/telemetry-in.md#recorded-and-what-if):
    `foreign` of them sent (not a summary, not a failed build), `rewritten` of those smaller than that."""
    if not foreign:
        return ""
    text = (
        f"; {foreign} calls are a foreign agent's (taken in from its spans): the knobs named are zymi's "
        "(the agent had none), and the base line is its history replayed with nothing masked"
    )
    if rewritten:
        return text + f": {rewritten} of its calls sent less than that (it rewrote its history itself)"
    return text + ", which is exactly what it sent"


async def _candidates_on_pool(
    location: StoreLocation,
    project: Path | None,
    candidates: dict[str, KnobDict],
    streams: Sequence[str] | None,
    common: dict[str, Any],
    sums: tuple[int, int, int],
    last_global_id: int,
    workers: int,
) -> dict[str, Totals]:
    """Every candidate's totals, replayed on a process pool (as `_replay_candidates` makes them)."""
    tried = _tried(candidates)
    how = pricing(common["prices"], common["model"], common["provider"])
    cmp = await replay_on_pool(
        location, project, tried, recorded_knobs=common["recorded_knobs"], streams=streams,
        workers=workers, last_global_id=last_global_id,
        progress=None, pricing=how, model=common["model"], output=common["output"], sums=sums,
    )  # fmt: skip
    return {p.name: p.total for p in cmp.profiles}


def _tried(candidates: dict[str, KnobDict]) -> list[tuple[str, ContextKnobs | None]]:
    return [(n, make_knobs(dict(k), f"advice {n}")) for n, k in candidates.items()]


def _best(
    findings: list[Finding], candidates: dict[str, KnobDict], totals: dict[str, Totals], before: Totals, obj: Any
) -> Recommendation | None:
    """The best knob set of every one tried, when it beats keeping the current knobs."""
    winners = [(n, t) for n, t in totals.items() if verdict(obj, before, t) is None]
    if not winners:
        return None
    name, after = min(winners, key=lambda o: rank(obj, o[1]))
    knobs = candidates[name]
    signals = [f.signal for f in findings if f.recommendation is not None and f.recommendation.knobs == knobs]
    verb = "recommends" if len(signals) == 1 else "recommend"
    return Recommendation(
        f"the best of {len(totals)} knob set(s) tried" + (f" ({', '.join(signals)} {verb} it)" if signals else ""),
        knobs=knobs,
        effect=effect(obj, name, after, before, knobs),
        searched="every knob set the findings searched",
        tried=len(totals),
    )
