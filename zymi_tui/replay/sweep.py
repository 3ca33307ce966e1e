"""A grid of observation_window x soft_cap_chars replayed over a store, with the Pareto front of
total input tokens against peak context, so a user can pick knob values from their own data."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from zymi_tui.context.knobs import ContextKnobs, make_knobs
from zymi_tui.errors import UserError
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.replay.compare import CAVEAT, Comparison, Progress, knob_dict
from zymi_tui.replay.costs import PriceTable
from zymi_tui.replay.whatifs import compare_store

DEFAULT_WINDOWS = (2, 4, 6, 8, 10, 15, 20)
DEFAULT_SOFT_CAPS = (20_000, 40_000, 60_000, 100_000, 400_000)


class SweepError(UserError):
    """A grid the user asked for that cannot be swept; one line."""

    title = "Sweep"


def parse_values(text: str, what: str) -> list[int]:
    """`2,4,6` or `2-10:2` (start-stop:step, stop included) or a mix; `40k` = 40000."""

    out: list[int] = []

    def number(s: str) -> int:
        m = re.fullmatch(r"\s*(\d[\d_]*)\s*([kKmM]?)\s*", s)
        if not m:
            raise SweepError(f"--{what} {text!r}: `{s}` is not a number; accepted: 2,4,6 or 2-10:2 (k = x1000)")
        scale = {"": 1, "k": 1000, "m": 1_000_000}[m.group(2).lower()]
        return int(m.group(1).replace("_", "")) * scale

    for part in text.split(","):
        if "-" in part:
            span, _, step_text = part.partition(":")
            start_text, _, stop_text = span.partition("-")
            start, stop = number(start_text), number(stop_text)
            step = number(step_text) if step_text else 1
            if step <= 0 or stop < start:
                raise SweepError(f"--{what} {text!r}: a range is START-STOP[:STEP] with STOP >= START and STEP > 0")
            out += list(range(start, stop + 1, step))
        else:
            out.append(number(part))
    if not out or len(out) > 100:
        raise SweepError(f"--{what} {text!r}: give 1 to 100 values")
    return sorted(set(out))


@dataclass
class SweepPoint:
    observation_window: int
    soft_cap_chars: int
    hard_cap_chars: int
    tokens_sum: int
    tokens_peak: int
    chars_peak: int
    over_soft_cap: int
    compactions_simulated: int
    hard_cap_failures: int
    provenance: str
    cache_breaks: int = 0
    cached_tokens_modelled: int = 0  # estimated (the price table's cache model)
    cost_with_cache: float | None = None  # estimated; None: no price for the model
    pareto: bool = False
    pareto_cost_with_cache: bool = False  # on the front of cost with cache vs peak tokens


@dataclass
class Sweep:
    points: list[SweepPoint]
    comparison: Comparison
    caveat: str = CAVEAT

    def to_json(self) -> dict[str, Any]:
        return {
            "caveat": self.caveat,
            "tokens_ratio_source": self.comparison.tokens_ratio_source,
            "points": [asdict(p) for p in self.points],
        }


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each point, whether no other point is at least as good on both and better on one (minimise)."""
    flags = []
    for i, (a, b) in enumerate(points):
        dominated = any((x <= a and y <= b) and (x < a or y < b) for j, (x, y) in enumerate(points) if j != i)
        flags.append(not dominated)
    return flags


def grid_profiles(
    base: ContextKnobs, windows: Sequence[int], soft_caps: Sequence[int]
) -> list[tuple[str, ContextKnobs | None]]:
    """One profile per (window, soft cap); the hard cap is raised to the soft cap where it is lower."""
    return [
        (f"w{w}/s{s}", make_knobs({**knob_dict(base), "observation_window": w, "soft_cap_chars": s,
                                   "hard_cap_chars": max(base.hard_cap_chars, s)}, f"sweep point w{w}/s{s}"))
        for w in windows
        for s in soft_caps
    ]  # fmt: skip


async def sweep(
    reader: EventReader,
    project: Path | None,
    base: ContextKnobs,
    windows: Sequence[int],
    soft_caps: Sequence[int],
    *,
    recorded_knobs: ContextKnobs,
    streams: Sequence[str] | None = None,
    last_global_id: int = 0,
    progress: Progress | None = None,
    prices: PriceTable | None = None,
    model: str | None = None,
    provider: str | None = None,
    location: StoreLocation | None = None,
    workers: int | None = None,
) -> Sweep:
    """Every grid point replayed: with the store's `location` and more than one worker (default: one
    per CPU on a store of `whatifs.POOL_MIN_EVENTS` or more), on a process pool (see `replay_on_pool`: the
    store's ranges, or else the points, shared among the workers); otherwise all points in one pass
    in this process (see `replay_many`). Both give the same figures."""
    profiles = grid_profiles(base, windows, soft_caps)
    cmp = await compare_store(
        reader, project, profiles, recorded_knobs=recorded_knobs, streams=streams, last_global_id=last_global_id,
        progress=progress, prices=prices, model=model, provider=provider, location=location, workers=workers,
        per_run=False,
    )  # fmt: skip
    points = [
        SweepPoint(
            int(p.knobs["observation_window"] or 0),
            int(p.knobs["soft_cap_chars"] or 0),
            int(p.knobs["hard_cap_chars"] or 0),
            p.total.tokens_sum,
            p.total.tokens_peak,
            p.total.chars_peak,
            p.total.over_soft_cap,
            p.total.compactions_simulated,
            p.total.hard_cap_failures,
            p.total.provenance,
            p.total.cache_breaks,
            p.total.cached_tokens_modelled,
            None if p.total.cost_with_cache is None else round(p.total.cost_with_cache.total, 6),
        )
        for p in cmp.profiles
    ]
    feasible = [p for p in points if p.hard_cap_failures == 0]  # a point that fails steps is no choice
    for point, flag in zip(feasible, pareto_front([(p.tokens_sum, p.tokens_peak) for p in feasible]), strict=True):
        point.pareto = flag
    priced = [p for p in feasible if p.cost_with_cache is not None]
    front = pareto_front([(p.cost_with_cache or 0.0, p.tokens_peak) for p in priced])
    for point, flag in zip(priced, front, strict=True):
        point.pareto_cost_with_cache = flag
    return Sweep(points, cmp)
