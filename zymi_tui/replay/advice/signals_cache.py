"""Cache signals: the context policy breaking the cached prefix, and zymi's Anthropic provider (no
cache_control breakpoint; the last System message replacing the system prompt). Every count is the
replay's: `Totals.cache_breaks` of the current knobs, as `zymi-tui replay` prints it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from zymi_tui.events.messages import SystemMessage
from zymi_tui.replay.advice.model import MIN_COST_GAIN, Finding, Recommendation
from zymi_tui.replay.advice.signals import Signals
from zymi_tui.replay.cache import predict
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.costs import cost_of

CACHE_BREAK_SHARE = 0.5  # the policy breaks the prefix on most calls that have a previous one

POLICY_CAUSES = {
    "masked": "masked by observation_window",
    "forgotten": "forgotten by forget_after_turns",
    "compaction": "a compaction",
}
POLICY_FIX = {
    "masked": "a wider observation_window masks later, so fewer calls break the prefix",
    "forgotten": "a larger forget_after_turns forgets later",
    "compaction": "a higher soft cap compacts less often",
}


def cause_kind(c: CallContext) -> str:
    """What broke the call's prefix: one of POLICY_CAUSES, or another word (task, memory, none)."""
    b = c.reuse.broken if c.reuse else None
    if b is None:
        return "none"
    return b.cause.split(" ", 1)[0]


def cache_breaks(s: Signals) -> list[Finding]:
    total = s.baseline.total
    broken = [c for c in s.sent if c.reuse is not None and c.reuse.broken is not None]
    with_previous = [c for c in s.sent if c.reuse is not None and not (c.reuse.messages == 0 and not c.reuse.broken)]
    policy = [c for c in broken if cause_kind(c) in POLICY_CAUSES]
    if not with_previous or len(policy) / len(with_previous) < CACHE_BREAK_SHARE:
        return []
    causes = Counter(cause_kind(c) for c in policy)
    worst = min(policy, key=lambda c: c.reuse.messages if c.reuse else 0)
    top = causes.most_common(1)[0][0]
    g = s.grid
    cands = s.candidates({"masked": g.windows(+1), "forgotten": g.forgets(+1), "compaction": g.soft_caps(+1)}[top])
    cost = "" if total.cost_with_cache is None else f"; cost with cache {total.cost_with_cache.total:.4f} (est.)"
    return [
        Finding(
            "cache_breaks",
            f"{total.cache_breaks} of {total.agent_calls} agent calls break the cached prefix, {len(policy)} of them "
            f"by the context policy{cost}",
            [f"{n} x {POLICY_CAUSES[cause]}" for cause, n in causes.most_common()],
            {
                "cache_breaks": total.cache_breaks,
                "agent_calls": total.agent_calls,
                "policy_breaks": len(policy),
                "causes": dict(causes),
                "calls": [[c.stream_id, c.sequence, c.reuse.messages if c.reuse else 0] for c in policy[:50]],
            },
            worst.stream_id,
            worst.sequence,
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
    preds = predict([f for f in p.calls if f.sent], fam[1], breakpoints=True)
    read, written = sum(x.cached for x in preds), sum(x.written for x in preds)
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
    hit = []
    for c in s.sent:
        assert c.rendered is not None
        sys_msgs = [e for e in c.rendered.entries if isinstance(e.message, SystemMessage)]
        if len(sys_msgs) > 1:
            hit.append((c, sys_msgs[0].bytes, sys_msgs[-1]))
    if not hit:
        return []
    c0 = hit[0][0]
    return [
        Finding(
            "anthropic_system_overwritten",
            f"on {len(hit)} call(s) a [memory] block or a summary replaced the system prompt: zymi's Anthropic "
            "provider keeps only the last System message, so the agent's instructions were not sent",
            [
                f"{c.stream_id} seq {c.sequence}: system prompt ({n:,} bytes) replaced by "
                f"{'the [memory] block' if last.layer == 'B' else 'a summary'} ({last.bytes:,} bytes)"
                for c, n, last in hit[:5]
            ],
            {
                "calls": [[c.stream_id, c.sequence] for c, _, _ in hit],
                "system_prompt_bytes_lost": sum(n for _, n, _ in hit),
            },
            c0.stream_id,
            c0.sequence,
            Recommendation(
                "run the agent on the OpenAI-compatible provider, or keep memory and summaries out of its steps",
                not_replayed="a provider behaviour, not a knob",
            ),
        )
    ]
