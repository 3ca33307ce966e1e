"""A replay's totals, kept as its rows go by, and the line that says which knobs it was rebuilt under."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.project.reader import read_project
from zymi_tui.replay.call_context import (
    AGENT_KNOBS,
    PROJECT_KNOBS,
    SAME_TRAJECTORY,
    STORE_KNOBS,
    UNKNOWN_KNOBS,
    CallContext,
)

from .replay_json import est_tokens

PREFIX_BASIS = "per step run, the first recorded call minus the rest rebuilt"


def knobs_line(sources: set[str], described: set[str], project: Path | None) -> tuple[str, str]:
    """The recorded knobs of a replay and where they come from: (text, source for JSON)."""
    what = " | ".join(sorted(described)) if described else "?"
    if not sources or UNKNOWN_KNOBS in sources:
        return f"unknown (no project describes this store): replayed under the engine defaults: {what}", "unknown"
    if sources == {AGENT_KNOBS}:
        return (
            "the agent's own (a foreign agent's spans: recorded = what it sent; zymi's builder never ran, and "
            "the rebuild replays its history with nothing masked or dropped)",
            "agent",
        )
    if sources == {STORE_KNOBS}:
        return f"recorded in the store (zymi-tui's engine wrote them): {what}", "store"
    if sources == {PROJECT_KNOBS} and project is not None:
        if read_project(project).context_section is None:
            return f"recorded: the engine defaults (project.yml sets no runtime.context): {what}", "project"
        return f"recorded (project.yml runtime.context): {what}", "project"
    return f"recorded (project and store): {what}", "mixed"


@dataclass
class ReplayTotals:
    """A replay's totals, kept as it runs."""

    rows: int = 0
    calls: int = 0
    compactions: int = 0
    simulated: int = 0
    hard_cap_failures: int = 0
    chars_sum: int = 0
    chars_peak: int = 0
    tokens_sum: int = 0
    tokens_peak: int = 0
    recorded_sum: int = 0
    recorded_peak: int = 0
    recorded_cached: int = 0
    recorded_cache_creation: int = 0
    cache_breaks: int = 0
    prefix_inferred: bool = False
    titled: bool = False  # the table's "Layer A inferred" line is printed
    knobs_sources: set[str] = field(default_factory=set)
    whatif_rows: int = 0
    knobs_seen: set[str] = field(default_factory=set)  # the recorded knobs the rows were rebuilt under
    _last_knobs: ContextKnobs | None = field(default=None, repr=False)  # described already

    def add(self, row: CallContext, tokens: bool) -> None:
        r = row.rendered
        self.rows += 1
        self.whatif_rows += row.whatif
        self.knobs_sources.add(row.knobs_source)
        if r is not None and not row.whatif and not row.is_compaction and r.knobs is not self._last_knobs:
            self.knobs_seen.add(r.knobs.describe())
            self._last_knobs = r.knobs
        failed = row.hard_cap_failure or (r is not None and r.hard_cap_exceeded)  # not sent (as in `compare`)
        self.calls += not failed
        self.compactions += row.is_compaction
        self.simulated += row.simulated
        self.hard_cap_failures += r is not None and r.hard_cap_exceeded
        self.prefix_inferred |= row.prefix_inferred
        if row.recorded_input_tokens is not None:
            self.recorded_sum += row.recorded_input_tokens
            self.recorded_peak = max(self.recorded_peak, row.recorded_input_tokens)
        self.recorded_cached += row.recorded_cached_tokens or 0
        self.recorded_cache_creation += row.recorded_cache_creation_tokens or 0
        self.cache_breaks += row.reuse is not None and row.reuse.broken is not None and not failed
        if r is None or failed:
            return
        self.chars_sum += r.chars
        if not row.is_compaction:  # the peak of the agent calls sent, as `compare`'s
            self.chars_peak = max(self.chars_peak, r.chars)
        if tokens and (n := est_tokens(row)) is not None:
            self.tokens_sum += n
            self.tokens_peak = max(self.tokens_peak, n)


def print_totals(run: ReplayTotals, as_json: bool, knobs: ContextKnobs | None, project: Path | None, tok: bool) -> None:
    recorded_text, recorded_source = knobs_line(run.knobs_sources, run.knobs_seen, project)
    if project is None and not run.whatif_rows:
        knobs = None  # the knobs asked for are the ones the store was replayed under (no step recorded others)
    totals = {
        "totals": True,
        "calls": run.calls,
        "compactions": run.compactions,
        "simulated_compactions": run.simulated,
        "hard_cap_failures": run.hard_cap_failures,
        "chars_sum": run.chars_sum,
        "chars_peak": run.chars_peak,
        "estimated_tokens_sum": run.tokens_sum,
        "estimated_tokens_peak": run.tokens_peak,
        "recorded_input_tokens_sum": run.recorded_sum,
        "recorded_input_tokens_peak": run.recorded_peak,
        "recorded_cached_input_tokens_sum": run.recorded_cached,
        "recorded_cache_creation_tokens_sum": run.recorded_cache_creation,
        "cache_breaks": run.cache_breaks,
        "knobs": knobs.describe() if knobs is not None else recorded_text,
        "knobs_source": "what-if" if knobs is not None else recorded_source,
        "prefix_inferred": run.prefix_inferred,
        "prefix_basis": PREFIX_BASIS if run.prefix_inferred else None,
    }
    if knobs is not None:
        totals["note"] = SAME_TRAJECTORY
    if as_json:
        sys.stdout.write(json.dumps(totals) + "\n")
        return
    from .common import out  # rich's console: loaded by the table, not by `replay --json`

    t = totals
    est = f"tokens (estimated) sum {t['estimated_tokens_sum']} peak {t['estimated_tokens_peak']}; " if tok else ""
    out.print(
        f"[bold]{t['calls']} call(s)[/], {t['compactions']} compaction(s) ({t['simulated_compactions']} simulated), "
        f"{t['hard_cap_failures']} hard-cap failure(s); chars sum {t['chars_sum']} peak {t['chars_peak']}; {est}"
        f"input tokens (recorded) sum {t['recorded_input_tokens_sum']} peak {t['recorded_input_tokens_peak']}, "
        f"cached {t['recorded_cached_input_tokens_sum']} (written {t['recorded_cache_creation_tokens_sum']}); "
        f"{t['cache_breaks']} call(s) break the cached prefix of the call before"
    )
    from rich.markup import escape  # imports `replay --json` does without

    out.print(f"knobs: {escape(str(totals['knobs']))}" + (f"  [yellow]{SAME_TRAJECTORY}[/]" if knobs else ""))
    if totals["prefix_inferred"]:
        out.print(f"[yellow]Layer A inferred[/] (no project): {PREFIX_BASIS}; every size above is an estimate")
