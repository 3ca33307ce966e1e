"""Cache signals: the context policy breaking the cached prefix, and zymi's Anthropic provider (no
cache_control breakpoint; the last System message replacing the system prompt). Every count is the
replay's: `Totals.cache_breaks` of the current knobs, as `zymi-tui replay` prints it."""

from __future__ import annotations

from typing import Any

from zymi_tui.replay.advice.model import MIN_COST_GAIN, Finding, Recommendation
from zymi_tui.replay.advice.signals import Signals
from zymi_tui.replay.advice.watch import POLICY_CAUSES
from zymi_tui.replay.costs import cost_of

CACHE_BREAK_SHARE = 0.5  # the policy breaks the prefix on most calls that have a previous one

POLICY_FIX = {
    "masked": "a wider observation_window masks later, so fewer calls break the prefix",
    "forgotten": "a larger forget_after_turns forgets later",
    "compaction": "a higher soft cap compacts less often",
}


def cache_breaks(s: Signals) -> list[Finding]:
    total, w = s.baseline.total, s.watch
    if not w.with_previous or w.policy_breaks / w.with_previous < CACHE_BREAK_SHARE:
        return []
    causes, worst = w.causes, w.worst
    assert worst is not None
    top = causes.most_common(1)[0][0]
    g = s.grid
    cands = s.candidates({"masked": g.windows(+1), "forgotten": g.forgets(+1), "compaction": g.soft_caps(+1)}[top])
    cost = "" if total.cost_with_cache is None else f"; cost with cache {total.cost_with_cache.total:.4f} (est.)"
    return [
        Finding(
            "cache_breaks",
            f"{total.cache_breaks} of {total.agent_calls} agent calls break the cached prefix, "
            f"{w.policy_breaks} of them by the context policy{cost}",
            [f"{n} x {POLICY_CAUSES[cause]}" for cause, n in causes.most_common()],
            {
                "cache_breaks": total.cache_breaks,
                "agent_calls": total.agent_calls,
                "policy_breaks": w.policy_breaks,
                "causes": dict(causes),
                "calls": w.policy_calls,
            },
            worst[0],
            worst[1],
            Recommendation(
                POLICY_FIX[top],
                candidates=cands,
                searched={
                    "masked": "observation_window",
                    "forgotten": "forget_after_turns",
                    "compaction": "soft_cap_chars",
                }[top]
                + " higher",
            ),
        )
    ]


def _anthropic(s: Signals) -> bool:
    return s.facts.provider == "anthropic"


def anthropic_no_cache(s: Signals) -> list[Finding]:
    """A breakpoint at the end of every request, costed by the cache model (the model's own minimum): a
    recommendation only when that estimate is lower than the cost now by at least 1%."""
    if not _anthropic(s) or s.prices is None:
        return []
    p = s.baseline
    fam = s.prices.cache_family(s.cmp.model, "anthropic")
    if fam is None:
        return []
    assert s.breakpoints is not None  # pass one modelled them for this family
    read, written = s.breakpoints
    figures: dict[str, Any] = {
        "tokens": p.total.tokens_sum,
        "cached_with_breakpoints": read,
        "written_with_breakpoints": written,
        "min_tokens": fam[1].min_tokens,
    }
    found = s.prices.price_for(s.cmp.model)
    now_cost = p.total.cost_with_cache or p.total.cost
    pays = False
    money = ""
    if found is not None and now_cost is not None:
        out_cost = now_cost.output
        with_bp = cost_of(
            s.prices,
            found[1],
            input_tokens=p.total.tokens_sum,
            cached_input_tokens=read,
            cache_creation_tokens=written,
            family=fam[1],
        )
        now, then = now_cost.total, with_bp.total + out_cost
        figures |= {"cost_now": round(now, 6), "cost_with_breakpoints": round(then, 6)}
        pays = then < now * (1 - MIN_COST_GAIN)
        money = f"; cost {now:.4f} now, {then:.4f} with breakpoints (est.)"
    rec = (
        Recommendation(
            "send a cache_control breakpoint (not a knob: a provider change, or a gateway that adds one)",
            not_replayed="a provider change, not a knob: the figures above are the cache model's estimate",
        )
        if pays
        else None
    )
    verdict = "" if pays or not money else ": a breakpoint would not pay for its cache writes here"
    return [
        Finding(
            "anthropic_no_cache",
            "zymi's Anthropic provider sends no cache_control breakpoint: no prefix is ever cached "
            f"({p.total.tokens_sum:,} input tokens all billed fresh){money}{verdict}",
            [
                f"a breakpoint at the end of each request would read ~{read:,} tokens from the cache and "
                f"write ~{written:,} (estimated; prefixes under {fam[1].min_tokens:,} tokens are not cached)"
            ],
            figures,
            recommendation=rec,
        )
    ]


def anthropic_system_overwritten(s: Signals) -> list[Finding]:
    if not _anthropic(s):
        return []
    hit = s.watch.system_overwritten
    if not hit:
        return []
    c0 = hit[0]
    return [
        Finding(
            "anthropic_system_overwritten",
            f"on {len(hit)} call(s) a [memory] block or a summary replaced the system prompt: zymi's Anthropic "
            "provider keeps only the last System message, so the agent's instructions were not sent",
            [
                f"{st} seq {q}: system prompt ({n:,} bytes) replaced by "
                f"{'the [memory] block' if layer == 'B' else 'a summary'} ({nbytes:,} bytes)"
                for st, q, n, layer, nbytes in hit[:5]
            ],
            {
                "calls": [[st, q] for st, q, *_ in hit],
                "system_prompt_bytes_lost": sum(n for _, _, n, _, _ in hit),
            },
            c0[0],
            c0[1],
            Recommendation(
                "run the agent on the OpenAI-compatible provider, or keep memory and summaries out of its steps",
                not_replayed="a provider behaviour, not a knob",
            ),
        )
    ]
