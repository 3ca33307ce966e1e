"""The advice as JSON, Markdown and the lines the CLI and the TUI panel print (one wording for all)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from zymi_tui.replay.advice.model import Advice, Effect, Finding, Objective, Recommendation, profile_name


def _effect_json(e: Effect) -> dict[str, Any]:
    return {**asdict(e), "hard_cap_risk": round(e.hard_cap_risk, 4), "gain": round(e.gain, 4)}


def recommendation_json(rec: Recommendation) -> dict[str, Any]:
    return {
        "text": rec.text,
        "knobs": rec.knobs,
        "step": rec.step,
        "mode": rec.mode,
        "effect": None if rec.effect is None else _effect_json(rec.effect),
        "not_replayed": rec.not_replayed,
        "searched": rec.searched or None,
        "tried": rec.tried,
        "nothing_to_change": rec.nothing_to_change,
        "rejected": rec.rejected,
    }


def finding_json(f: Finding) -> dict[str, Any]:
    d: dict[str, Any] = {
        "signal": f.signal,
        "summary": f.summary,
        "evidence": f.evidence,
        "figures": f.figures,
        "call": None if f.stream_id is None else {"stream_id": f.stream_id, "sequence": f.sequence},
    }
    if f.recommendation is not None:
        d["recommendation"] = recommendation_json(f.recommendation)
    return d


def to_json(advice: Advice) -> dict[str, Any]:
    """The advice as one JSON value (`json_parts` writes it a finding at a time)."""
    return {**_json_head(advice), "findings": [finding_json(f) for f in advice.findings]}


def _json_head(advice: Advice) -> dict[str, Any]:
    """`to_json` but its findings (the last key)."""
    return {
        "caveat": advice.caveat,
        "knobs": advice.knobs,
        "model": advice.model,
        "price_entry": advice.price_entry,
        "cache_family": advice.cache_family,
        "calls": advice.calls,
        "objective": {"kind": advice.objective.kind, "label": advice.objective.label},
        "baseline": None if advice.baseline is None else asdict(advice.baseline),
        "tried": advice.tried,
        "nothing_to_change": advice.nothing_to_change,
        "best": None if advice.best is None else recommendation_json(advice.best),
        "signals": sorted({f.signal for f in advice.findings}),
    }


def json_parts(advice: Advice) -> Iterator[str]:
    """`json.dumps(to_json(advice), indent=1, ensure_ascii=False)` and a line break, a finding at a time:
    the whole text of a store's thousands of findings, and the encoder's chunks of it, are not held
    (16,667 findings on many_1m: ~230 MB at once). A finding is the list's item at depth 2, so its own
    dump's line breaks (JSON strings hold none raw) are indented by two more spaces."""
    if not advice.findings:
        yield json.dumps(to_json(advice), indent=1, ensure_ascii=False) + "\n"
        return
    head = json.dumps({**_json_head(advice), "findings": []}, indent=1, ensure_ascii=False)
    yield head[: -len("[]\n}")] + "["
    sep = "\n  "
    for f in advice.findings:
        yield sep + json.dumps(finding_json(f), indent=1, ensure_ascii=False).replace("\n", "\n  ")
        sep = ",\n  "
    yield "\n ]\n}\n"


def _money(x: float | None) -> str:
    return "no price" if x is None else f"{x:.4f}"


def effect_line(e: Effect) -> str:
    obj = Objective(e.objective)
    head = (
        f"{obj.short} {obj.text(e.objective_value_before)} → {obj.text(e.objective_value)} ({-e.gain:+.1%}); "
        if e.objective_value_before
        else ""
    )
    cost = (
        ""
        if e.objective == "cost_with_cache" or e.cost_with_cache is None
        else f"cost with cache {_money(e.cost_with_cache_before)} → {_money(e.cost_with_cache)}; "
    )
    return head + (
        f"input tokens {e.tokens_sum_before:,} → {e.tokens_sum:,}; {cost}compactions {e.compactions_before} → "
        f"{e.compactions}; hard-cap failures "
        f"{e.hard_cap_failures_before} → {e.hard_cap_failures}; peak {e.chars_peak_before:,} → {e.chars_peak:,} "
        f"bytes ({e.hard_cap_risk:.0%} of the hard cap); cache breaks {e.cache_breaks_before} → {e.cache_breaks} "
        f"(tokens {e.tokens_provenance}; costs estimated)"
    )


def tradeoff_line(e: Effect) -> str | None:
    """A trade-off shown as one: what the change lowers, and what it raises."""
    if not e.tradeoff:
        return None
    obj = Objective(e.objective)
    return (
        f"trade-off: {obj.short} {obj.text(e.objective_value_before)} → {obj.text(e.objective_value)} "
        f"({-e.gain:+.1%}) for {'; '.join(e.tradeoff)}"
    )


def recommendation_lines(rec: Recommendation) -> list[str]:
    """The lines under a recommendation's text (knobs, effect, trade-off, what was tried)."""
    out = []
    if rec.knobs is not None:
        values = ", ".join(f"{a}={'off' if b is None else b}" for a, b in rec.knobs.items())
        out.append(f"knobs {profile_name(rec.knobs)}: {values}")
    if rec.effect is not None:
        out.append(f"replayed on this store, against keeping the current knobs: {effect_line(rec.effect)}")
        trade = tradeoff_line(rec.effect)
        if trade:
            out.append(trade)
    if rec.tried:
        out.append(f"searched: {rec.searched or '-'} ({rec.tried} knob set(s) replayed)")
    if rec.rejected:
        out.append(rec.rejected)
    if rec.not_replayed:
        out.append(f"not replayed: {rec.not_replayed}")
    return out


def head_lines(advice: Advice) -> list[str]:
    """The objective, the current knobs' figures, and the overall verdict."""
    k, b, obj = advice.knobs, advice.baseline, advice.objective
    forget = "off" if k["forget_after_turns"] is None else k["forget_after_turns"]
    lines = [
        f"Current knobs: window {k['observation_window']}, soft {k['soft_cap_chars']:,}, hard {k['hard_cap_chars']:,}, "
        f"min_tail {k['min_tail_turns']}, forget {forget}. "
        f"{advice.calls} agent calls. Model: {advice.model or 'unknown'} ({advice.price_entry or 'no price'}; "
        f"cache model: {advice.cache_family or 'none'}).",
        f"Objective: {obj.label}; hard-cap failures are a constraint (a change never adds one). Every candidate is "
        "replayed and compared with keeping the current knobs.",
    ]
    if b is not None:
        recorded = ""
        if b.cached_tokens_recorded or b.cache_creation_tokens_recorded:
            recorded = (
                f"; cost with the recorded cache usage {_money(b.cost_recorded_cache)} (recorded: "
                f"{b.cached_tokens_recorded:,} cached, {b.cache_creation_tokens_recorded:,} written)"
            )
        lines.append(
            "Baseline (current knobs, replayed): "
            + (f"{obj.short} {obj.text(b.objective_value)}; " if obj.money else "")
            + f"input tokens "
            f"{b.tokens_sum:,} ({b.tokens_provenance}); cache breaks {b.cache_breaks} of {b.agent_calls} agent calls; "
            f"compactions {b.compactions}; hard-cap failures {b.hard_cap_failures}{recorded}."
        )
    if advice.best is None:
        lines.append(
            f"Nothing to change: none of the {advice.tried} knob set(s) tried beats keeping the current knobs."
            if advice.tried
            else "Nothing to change: no signal calls for another knob set."
        )
    else:
        lines.append(f"Best change: {advice.best.text}.")
        lines += ["  " + line for line in recommendation_lines(advice.best)]
    return lines


def to_markdown(advice: Advice, title: str = "zymi-tui advise") -> str:
    return "".join(markdown_parts(advice, title))


def markdown_parts(advice: Advice, title: str = "zymi-tui advise") -> Iterator[str]:
    """The Markdown report a finding at a time (`to_markdown`: all of them joined): its lines joined by
    line breaks, the trailing white space of the last part dropped (every part has text: it is that of
    the whole), then one line break."""
    lines = [f"# {title}", "", f"> **{advice.caveat}**", ""]
    lines += [*head_lines(advice), ""]
    if not advice.findings:
        lines.append("No findings.")
    for f in advice.findings:
        yield "\n".join(lines) + "\n"
        lines = [f"## `{f.signal}`", "", f.summary, ""]
        if f.stream_id is not None:
            lines += [f"Shown at: `{f.stream_id}` seq {f.sequence}", ""]
        lines += [f"- {e}" for e in f.evidence]
        rec = f.recommendation
        if rec is not None:
            lines += ["", f"**Recommendation:** {rec.text}", ""]
            lines += [f"- {line}" for line in recommendation_lines(rec)]
        lines.append("")
    yield "\n".join(lines).rstrip() + "\n"
