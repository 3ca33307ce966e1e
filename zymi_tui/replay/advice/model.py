"""What `advise` reports: findings, recommendations, their replayed effects, and the one objective
every recommendation is judged on."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zymi_tui.context.knobs import KnobDict as KnobDict  # the advice modules take it from here
from zymi_tui.project.reader import read_project
from zymi_tui.replay.compare import CAVEAT
from zymi_tui.replay.figures import Totals

MIN_COST_GAIN = 0.01  # a change that lowers cost by less than this share changes nothing measurable
MIN_TOKENS_GAIN = 0.02  # the same when the objective is tokens sent


@dataclass(frozen=True)
class Objective:
    """What every recommendation of one advice lowers: cost with cache when the model has a price, else
    input tokens sent; hard-cap failures first, as a constraint (a change never adds one)."""

    kind: str  # "cost_with_cache" | "cost" (a price, no cache model) | "tokens"
    currency: str = "USD"

    @property
    def label(self) -> str:
        return {
            "cost_with_cache": "cost with cache (est., the cache model's reads and writes)",
            "cost": "cost (est.; no cache model for the model's provider)",
        }.get(self.kind, "input tokens sent (no price for the model)")

    @property
    def short(self) -> str:
        return {"cost_with_cache": "cost with cache", "cost": "cost"}.get(self.kind, "input tokens sent")

    @property
    def money(self) -> bool:
        return self.kind != "tokens"

    @property
    def min_gain(self) -> float:
        return MIN_COST_GAIN if self.money else MIN_TOKENS_GAIN

    def value(self, t: Totals) -> float:
        cost = t.cost_with_cache if self.kind == "cost_with_cache" else t.cost
        if self.money:
            return cost.total if cost is not None else 0.0
        return float(t.tokens_sum)

    def text(self, x: float) -> str:
        return f"{x:.4f} {self.currency}" if self.money else f"{round(x):,} tokens"


def objective_for(t: Totals, currency: str = "USD") -> Objective:
    if t.cost_with_cache is not None:
        return Objective("cost_with_cache", currency)
    return Objective("cost" if t.cost is not None else "tokens", currency)


def compactions(t: Totals) -> int:
    return t.compactions_recorded + t.compactions_simulated


@dataclass
class Effect:
    """A knob set replayed on this store, beside the current (recorded) knobs' figures: the same
    figures `zymi-tui compare` and `zymi-tui replay --set` give for it."""

    profile: str
    objective: str  # Objective.kind
    objective_value: float
    objective_value_before: float
    tokens_sum: int
    tokens_sum_before: int
    chars_sum: int
    chars_sum_before: int
    compactions: int
    compactions_before: int
    hard_cap_failures: int
    hard_cap_failures_before: int
    chars_peak: int
    chars_peak_before: int
    hard_cap_chars: int
    cache_breaks: int
    cache_breaks_before: int
    cost_with_cache: float | None  # estimated (the cache model), both sides alike
    cost_with_cache_before: float | None
    tradeoff: list[str] = field(default_factory=list)  # figures the change makes worse
    tokens_provenance: str = "estimated"  # of the tokens after the change; costs are always estimated

    @property
    def hard_cap_risk(self) -> float:
        """The peak as a share of the hard cap."""
        return self.chars_peak / self.hard_cap_chars if self.hard_cap_chars else 0.0

    @property
    def gain(self) -> float:
        """How much lower the objective is, as a share of the current knobs' value."""
        b = self.objective_value_before
        return (b - self.objective_value) / b if b else 0.0


@dataclass
class Recommendation:
    text: str
    knobs: KnobDict | None = None  # the whole knob set to use (None: not a knob change, or nothing wins)
    step: str | None = None  # `pipeline/step` whose context.mode to change
    mode: str | None = None
    effect: Effect | None = None
    not_replayed: str | None = None  # why there is no replayed effect
    candidates: list[KnobDict] = field(default_factory=list, repr=False)  # searched on the objective
    searched: str = ""  # what was searched, for a person ("observation_window 1, 2, 3, 5, 8")
    tried: int = 0  # knob sets replayed for it
    nothing_to_change: bool = False  # candidates were tried and none beats keeping the current knobs
    rejected: str | None = None  # the best candidate tried and why it does not win


@dataclass
class Finding:
    signal: str
    summary: str
    evidence: list[str]
    figures: dict[str, Any]
    stream_id: str | None = None  # the call that shows it best
    sequence: int | None = None
    recommendation: Recommendation | None = None


@dataclass
class Baseline:
    """The current knobs replayed: the figures every effect is compared with (one replay: the findings,
    the panel and `zymi-tui replay` read the same counts)."""

    agent_calls: int
    calls: int  # LLM calls sent, summaries included
    tokens_sum: int
    tokens_provenance: str
    chars_sum: int
    chars_peak: int
    compactions: int
    hard_cap_failures: int
    cache_breaks: int
    objective_value: float
    cost_with_cache: float | None  # estimated: the cache model
    cost_recorded_cache: float | None  # priced with the cache usage the provider recorded
    cached_tokens_recorded: int
    cache_creation_tokens_recorded: int


@dataclass
class Advice:
    findings: list[Finding]
    knobs: KnobDict
    model: str | None
    price_entry: str | None
    cache_family: str | None
    calls: int  # agent calls sent under the current knobs (the baseline's)
    objective: Objective = field(default_factory=lambda: Objective("tokens"))
    baseline: Baseline | None = None
    best: Recommendation | None = None  # the best knob set of every one tried, if it beats the current
    tried: int = 0  # distinct knob sets replayed
    caveat: str = CAVEAT

    @property
    def nothing_to_change(self) -> bool:
        return self.best is None


@dataclass(frozen=True)
class ProjectFacts:
    """What the advice needs of the project (read once)."""

    has_runtime_context: bool = True
    provider: str | None = None
    model: str | None = None
    step_agent: dict[tuple[str, str], str] = field(default_factory=dict)  # (pipeline, step) -> agent
    agent_tools: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fresh_steps: frozenset[tuple[str, str]] = frozenset()


def project_facts(project: Path | None) -> ProjectFacts:
    if project is None:
        return ProjectFacts()
    read = read_project(project)
    pipelines = read.pipelines.values()
    step_agent = {(p.name, s.id): s.agent for p in pipelines for s in p.steps.values() if s.agent is not None}
    return ProjectFacts(
        has_runtime_context=read.context_section is not None,
        provider=read.llm_setting("provider"),
        model=read.llm_setting("model"),
        step_agent=step_agent,
        agent_tools=dict(read.agent_tools),
        fresh_steps=frozenset((p.name, s.id) for p in pipelines for s in p.steps.values() if s.fresh),
    )


def profile_name(knobs: KnobDict) -> str:
    """A stable name for a knob set (the name `compare` would be given)."""
    forget = "off" if knobs["forget_after_turns"] is None else knobs["forget_after_turns"]
    return (
        f"w{knobs['observation_window']}-s{knobs['soft_cap_chars']}-h{knobs['hard_cap_chars']}"
        f"-t{knobs['min_tail_turns']}-f{forget}"
    )
