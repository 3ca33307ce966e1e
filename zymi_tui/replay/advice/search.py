"""The effect search: candidate knob sets along one knob (a small grid), each replayed and judged on the
advice's objective against keeping the current knobs. A candidate that is not better is dropped, and so is
one that changes nothing measurable; the best of the rest is the recommendation, its trade-offs named."""

from __future__ import annotations

from collections.abc import Iterable

from zymi_tui.replay.advice.model import (
    Effect,
    KnobDict,
    Objective,
    Recommendation,
    compactions,
    profile_name,
)
from zymi_tui.replay.figures import Totals

WINDOWS = (1, 2, 4, 8, 16, 32, 64)  # observation_window values searched (doubling: each one more replayer)
SOFT_DOWN = (0.25, 0.5, 0.75)  # soft cap multiples searched below the current one
SOFT_UP = (1.5, 2.0, 3.0)
FORGETS = (2, 4, 8, 12, 20)


class Grid:
    """Knob sets near the current ones, one knob (or a named pair) changed at a time."""

    def __init__(self, current: KnobDict, max_turns: int) -> None:
        self.current = current
        # a window of more turns than any call holds masks nothing: every such window replays alike
        self.window_cap = max(1, max_turns + 1)

    def knobs(self, **change: int | None) -> KnobDict:
        k = {**self.current, **change}
        if (k["hard_cap_chars"] or 0) < (k["soft_cap_chars"] or 0):
            k["hard_cap_chars"] = k["soft_cap_chars"]
        return k

    def _w(self) -> int:
        return int(self.current["observation_window"] or 0)

    def windows(self, direction: int) -> list[KnobDict]:
        """observation_window below (-1) or above (+1) the current one."""
        w = self._w()
        values = sorted({min(v, self.window_cap) for v in WINDOWS})
        if direction < 0:
            picked = [v for v in values if v < min(w, self.window_cap + 1)]
        else:
            picked = [v for v in values if v > w] if w < self.window_cap else []
        return [self.knobs(observation_window=v) for v in picked]

    def soft_caps(self, direction: int) -> list[KnobDict]:
        soft = int(self.current["soft_cap_chars"] or 0)
        hard = int(self.current["hard_cap_chars"] or 0)
        if direction < 0:
            return [self.knobs(soft_cap_chars=max(1, int(soft * m))) for m in SOFT_DOWN]
        return [self.knobs(soft_cap_chars=int(soft * m), hard_cap_chars=max(hard, int(soft * m))) for m in SOFT_UP]

    def forgets(self, direction: int) -> list[KnobDict]:
        f = self.current["forget_after_turns"]
        if direction < 0:
            return [self.knobs(forget_after_turns=v) for v in FORGETS if f is None or v < f]
        if f is None:
            return []
        return [self.knobs(forget_after_turns=v) for v in (*(v for v in FORGETS if v > f), None)]

    def tails(self) -> list[KnobDict]:
        t = int(self.current["min_tail_turns"] or 0)
        return [self.knobs(min_tail_turns=v) for v in sorted({1, max(1, t // 2)}) if v < t]


def distinct(current: KnobDict, *groups: Iterable[KnobDict]) -> list[KnobDict]:
    """The knob sets of `groups` in order, each once, without the current one."""
    seen: dict[str, KnobDict] = {}
    for group in groups:
        for k in group:
            if k != current:
                seen.setdefault(profile_name(k), k)
    return list(seen.values())


def verdict(obj: Objective, before: Totals, after: Totals) -> str | None:
    """None when `after` beats `before`, else why not (worse, equal, or a change of nothing measurable)."""
    if after.hard_cap_failures > before.hard_cap_failures:
        return f"hard-cap failures {before.hard_cap_failures} → {after.hard_cap_failures}"
    vb, va = obj.value(before), obj.value(after)
    fewer_failures = after.hard_cap_failures < before.hard_cap_failures
    if not fewer_failures and va >= vb:
        return f"{obj.short} {obj.text(vb)} → {obj.text(va)}: not lower"
    removed = fewer_failures or compactions(after) < compactions(before) or after.cache_breaks < before.cache_breaks
    gain = (vb - va) / vb if vb else 0.0
    if not removed and gain < obj.min_gain:
        return (
            f"{obj.short} {obj.text(vb)} → {obj.text(va)} ({gain:.1%}, under {obj.min_gain:.0%}) and no compaction, "
            "failure or cache break removed: changes nothing measurable"
        )
    return None


def rank(obj: Objective, t: Totals) -> tuple[int, float, int]:
    return (t.hard_cap_failures, obj.value(t), t.tokens_sum)


def _pct(a: float, b: float) -> str:
    return f" ({(b - a) / a:+.0%})" if a else ""


def tradeoffs(obj: Objective, before: Totals, after: Totals) -> list[str]:
    """The figures the change makes worse while it lowers the objective."""
    out = []
    if obj.money and after.tokens_sum > before.tokens_sum:
        out.append(
            f"input tokens {before.tokens_sum:,} → {after.tokens_sum:,}{_pct(before.tokens_sum, after.tokens_sum)}"
        )
    if after.cache_breaks > before.cache_breaks:
        out.append(f"cache breaks {before.cache_breaks} → {after.cache_breaks}")
    if compactions(after) > compactions(before):
        out.append(f"compactions {compactions(before)} → {compactions(after)} (each a summary call, est.)")
    if after.chars_peak > before.chars_peak:
        out.append(f"peak context {before.chars_peak:,} → {after.chars_peak:,} bytes")
    return out


def _cost(t: Totals) -> float | None:
    return None if t.cost_with_cache is None else round(t.cost_with_cache.total, 6)


def effect(obj: Objective, name: str, after: Totals, before: Totals, knobs: KnobDict) -> Effect:
    return Effect(
        profile=name,
        objective=obj.kind,
        objective_value=round(obj.value(after), 6),
        objective_value_before=round(obj.value(before), 6),
        tokens_sum=after.tokens_sum,
        tokens_sum_before=before.tokens_sum,
        chars_sum=after.chars_sum,
        chars_sum_before=before.chars_sum,
        compactions=compactions(after),
        compactions_before=compactions(before),
        hard_cap_failures=after.hard_cap_failures,
        hard_cap_failures_before=before.hard_cap_failures,
        chars_peak=after.chars_peak,
        chars_peak_before=before.chars_peak,
        hard_cap_chars=int(knobs["hard_cap_chars"] or 0),
        cache_breaks=after.cache_breaks,
        cache_breaks_before=before.cache_breaks,
        cost_with_cache=_cost(after),
        cost_with_cache_before=_cost(before),
        tradeoff=tradeoffs(obj, before, after),
        tokens_provenance=after.provenance,
    )


def settle(rec: Recommendation, obj: Objective, before: Totals, totals: dict[str, Totals]) -> None:
    """Judge the recommendation's candidates: keep the best that beats the current knobs, else say there is
    nothing to change (and why the best tried does not win)."""
    options = [(k, totals[profile_name(k)]) for k in rec.candidates if profile_name(k) in totals]
    rec.tried = len(options)
    winners = [(k, t) for k, t in options if verdict(obj, before, t) is None]
    if winners:
        knobs, after = min(winners, key=lambda o: rank(obj, o[1]))
        rec.knobs = knobs
        rec.effect = effect(obj, profile_name(knobs), after, before, knobs)
        return
    rec.nothing_to_change = True
    if options:
        k, t = min(options, key=lambda o: rank(obj, o[1]))
        rec.rejected = f"best tried {profile_name(k)}: {verdict(obj, before, t)}"
    rec.text = (
        f"nothing to change: of {len(options)} knob set(s) tried ({rec.searched or rec.text}), none lowers "
        f"{obj.short} against keeping the current knobs"
    )
