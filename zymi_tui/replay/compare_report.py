"""`compare`'s figures as a person or a program reads them: the totals table (Markdown), JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from zymi_tui.replay.compare import Comparison
from zymi_tui.replay.figures import Totals

COLUMNS = [
    ("calls", "LLM calls"),
    ("chars_sum", "input chars (sum)"),
    ("chars_peak", "input chars (peak)"),
    ("tokens_sum", "input tokens (sum)"),
    ("tokens_peak", "input tokens (peak)"),
    ("over_soft_cap", "calls over soft cap"),
    ("compactions_recorded", "compactions (recorded)"),
    ("compactions_simulated", "compactions (simulated, est.)"),
    ("hard_cap_failures", "hard-cap failures"),
    ("cache_breaks", "cache breaks"),
    ("cached_tokens_modelled", "cached input tokens (modelled, est.)"),
    ("cached_tokens_recorded", "cached input tokens (recorded)"),
]


def _cost_text(t: Totals, currency: str) -> str:
    if t.cost is None:
        return "no price"
    return f"{t.cost.total:.4f} {currency}" + (" (est.)" if t.cost_estimated else "") + recorded_cache_note(t)


def recorded_cache_note(t: Totals) -> str:
    """The label of a cost that prices the provider's recorded cache reads or writes."""
    if not (t.cached_tokens_recorded or t.cache_creation_tokens_recorded):
        return ""
    return f" (recorded cache: {t.cached_tokens_recorded:,} read, {t.cache_creation_tokens_recorded:,} written)"


def _cache_cost_text(t: Totals, currency: str) -> str:
    if t.cost_with_cache is None:
        return "no price" if t.cost is None else "no cache model"
    return f"{t.cost_with_cache.total:.4f} {currency} (est.)"


def rows(cmp: Comparison) -> list[dict[str, Any]]:
    """One flat row per (scope, profile); scope is a run stream or `TOTAL`."""
    out: list[dict[str, Any]] = []
    for scope in [*cmp.runs(), "TOTAL"]:
        for p in cmp.profiles:
            t = p.total if scope == "TOTAL" else p.per_run.get(scope)
            if t is None:
                continue
            row: dict[str, Any] = {"scope": scope, "profile": p.name}
            row.update({key: getattr(t, key) for key, _ in COLUMNS})
            row["cost"] = None if t.cost is None else round(t.cost.total, 6)
            row["cost_with_cache"] = None if t.cost_with_cache is None else round(t.cost_with_cache.total, 6)
            row["provenance"] = t.provenance
            out.append(row)
    return out


def to_json(cmp: Comparison) -> dict[str, Any]:
    return {
        "caveat": cmp.caveat,
        "tokens_per_byte": cmp.tokens_per_byte,
        "tokens_ratio_source": cmp.tokens_ratio_source,
        "model": cmp.model,
        "price_entry": cmp.price_entry,
        "output_tokens_recorded": cmp.output_tokens_recorded,
        "cache_family": cmp.cache_family,
        "profiles": [
            {
                "name": p.name,
                "knobs": p.knobs,
                "recorded_knobs": p.recorded,
                "total": p.total.as_dict(),
                "runs": {run: t.as_dict() for run, t in p.per_run.items()},
            }
            for p in cmp.profiles
        ],
    }


def to_json_text(cmp: Comparison) -> str:
    return json.dumps(to_json(cmp), indent=1, ensure_ascii=False) + "\n"


def to_csv(cmp: Comparison) -> str:
    buf = io.StringIO()
    table = rows(cmp)
    fields = ["scope", "profile", *(k for k, _ in COLUMNS), "cost", "cost_with_cache", "provenance"]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(table)
    return buf.getvalue()


def to_markdown(cmp: Comparison, currency: str = "USD") -> str:
    names = [p.name for p in cmp.profiles]
    lines = [
        f"> **{cmp.caveat}**",
        "",
        f"Tokens: recorded where the context is unchanged, else estimated ({cmp.tokens_ratio_source}, "
        f"{cmp.tokens_per_byte:.3f} tokens/byte). Model: {cmp.model or 'unknown'}"
        f"{'' if cmp.price_entry else ' (no price)'}.",
        "",
        "| figure | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for key, label in COLUMNS:
        lines.append(f"| {label} | " + " | ".join(f"{getattr(p.total, key):,}" for p in cmp.profiles) + " |")
    lines.append("| cost | " + " | ".join(_cost_text(p.total, currency) for p in cmp.profiles) + " |")
    lines.append(
        "| cost with cache (est.) | " + " | ".join(_cache_cost_text(p.total, currency) for p in cmp.profiles) + " |"
    )
    if any(p.total.cost_recorded_cache is not None for p in cmp.profiles):
        lines.append(
            "| cost with the recorded cache usage | "
            + " | ".join(
                "-" if p.total.cost_recorded_cache is None else f"{p.total.cost_recorded_cache.total:.4f} {currency}"
                for p in cmp.profiles
            )
            + " |"
        )
    lines.append(
        "| cache model error (modelled − recorded cached tokens) | "
        + " | ".join(
            f"{p.total.cached_tokens_modelled - p.total.cached_tokens_recorded:+,}" if p.recorded else "-"
            for p in cmp.profiles
        )
        + " |"
    )
    lines.append("| figures | " + " | ".join(p.total.provenance for p in cmp.profiles) + " |")
    lines += ["", "Per run stream (input tokens sum / peak, compactions, hard-cap failures):", ""]
    lines += ["| run | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for run in cmp.runs():
        cells = []
        for p in cmp.profiles:
            t = p.per_run.get(run)
            cells.append(
                "-"
                if t is None
                else f"{t.tokens_sum:,} / {t.tokens_peak:,}, {t.compactions_recorded}+{t.compactions_simulated}est, "
                f"{t.hard_cap_failures}"
            )
        lines.append(f"| {run} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
