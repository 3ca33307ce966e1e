"""What the parent/fork comparison shows, computed from each run's recorded events (no replay).

Curves are `approx_context_chars` of every agent LLM call in store order; tokens are the recorded
`usage`; the answer is the run's `PipelineCompleted.final_output`. The answer diff is by words, so a
one-paragraph answer still shows what changed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from zymi_tui.events.kinds import (
    ContextCompacted,
    LlmCallCompleted,
    LlmCallStarted,
    PipelineCompleted,
    PipelineRequested,
    ResumeForked,
    WorkflowNodeStarted,
)
from zymi_tui.events.store import step_of
from zymi_tui.events.stored import StoredEvent
from zymi_tui.replay.costs import PriceTable, cost_of


@dataclass
class RunFigures:
    stream_id: str
    curve: list[int] = field(default_factory=list)  # approx_context_chars of each agent call
    curve_steps: list[str] = field(default_factory=list)  # the step of each point
    calls: int = 0
    compaction_calls: int = 0
    compactions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    outcome: str = "running"  # "ok" | "FAIL" | "running" (zymi's labels)
    error: str | None = None
    answer: str | None = None
    knobs: dict[str, object] | None = None  # the fork's recorded knobs (ResumeForked's zymi_tui field)
    fork_at_step: str | None = None
    usage_by_model: dict[str, list[int]] = field(default_factory=dict)  # model ("" unknown) -> [in, cached, out]

    @property
    def peak(self) -> int:
        return max(self.curve, default=0)

    def cost(self, table: PriceTable, fallback_model: str | None) -> float | None:
        """Recorded usage priced per model (our engine records each step's model; zymi's runs take
        `fallback_model`, the project's); None when a model that was used has no price."""
        total = 0.0
        for model, (inp, cached, out) in self.usage_by_model.items():
            found = table.price_for(model or fallback_model)
            if found is None:
                return None
            total += cost_of(table, found[1], input_tokens=inp, cached_input_tokens=cached, output_tokens=out).total
        return total


@dataclass(frozen=True)
class ForkSpan:
    """What a fork re-ran, and so what of its parent it is compared with: the parent's request (turn) whose
    inputs the fork took, and the steps it re-executed (frozen steps are copies: left out on both sides)."""

    parent_correlation_id: str | None
    steps: frozenset[str]
    turn: int = 1
    turns: int = 1

    def describe(self) -> str:
        others = f"; the parent's other {self.turns - 1} turn(s) left out" if self.turns > 1 else ""
        return (
            f"compared on the span the fork re-ran: turn {self.turn} of {self.turns}, steps "
            f"{', '.join(sorted(self.steps)) or '(none yet)'}{others}"
        )

    def in_parent(self, se: StoredEvent) -> bool:
        step = step_of(se.event.stream_id)
        return se.event.correlation_id == self.parent_correlation_id and (step is None or step in self.steps)

    def in_fork(self, se: StoredEvent) -> bool:
        step = step_of(se.event.stream_id)
        return step is None or step in self.steps


def fork_span(parent: Sequence[StoredEvent], fork: Sequence[StoredEvent]) -> ForkSpan | None:
    """The span of `fork` (None: not a fork). The re-run steps are those ResumeForked names (our engine
    records them), else the steps with events written after the fork was made (copies keep old times)."""
    forked = next((se for se in fork if isinstance(se.event.kind, ResumeForked)), None)
    if forked is None:
        return None
    k = forked.event.kind
    assert isinstance(k, ResumeForked)
    extra = k.engine_notes
    recorded = extra.get("re_executed") if isinstance(extra, dict) else None
    if isinstance(recorded, list):
        steps = frozenset(str(x) for x in recorded)
    else:
        since = forked.event.timestamp
        steps = frozenset(
            st for se in fork if (st := step_of(se.event.stream_id)) is not None and se.event.timestamp >= since
        )
    requests = [se.event.correlation_id for se in parent if isinstance(se.event.kind, PipelineRequested)]
    turn = requests.index(k.parent_correlation_id) + 1 if k.parent_correlation_id in requests else 1
    return ForkSpan(k.parent_correlation_id, steps, turn, max(len(requests), 1))


def span_figures(
    parent_id: str, parent: Sequence[StoredEvent], fork_id: str, fork: Sequence[StoredEvent]
) -> tuple[RunFigures, RunFigures, ForkSpan | None]:
    """Both runs' figures on the same span: the turn and the steps the fork re-ran."""
    span = fork_span(parent, fork)
    if span is None:
        return run_figures(parent_id, parent), run_figures(fork_id, fork), None
    return (
        run_figures(parent_id, [se for se in parent if span.in_parent(se)]),
        run_figures(fork_id, [se for se in fork if span.in_fork(se)]),
        span,
    )


def run_figures(stream_id: str, events: Sequence[StoredEvent]) -> RunFigures:
    """Figures of one run (its run stream and step streams, any order: sorted by global id here)."""
    f = RunFigures(stream_id)
    models: dict[str, str] = {}  # step -> model, from our engine's WorkflowNodeStarted extra field
    for se in sorted(events, key=lambda e: e.global_id):
        k = se.event.kind
        if isinstance(k, WorkflowNodeStarted):
            extra = k.engine_notes
            if isinstance(extra, dict) and isinstance(extra.get("model"), str):
                models[k.node_id] = extra["model"]
        if isinstance(k, LlmCallStarted):
            if k.iteration == 0:
                f.compaction_calls += 1
            else:
                f.calls += 1
                f.curve.append(k.approx_context_chars)
                f.curve_steps.append(step_of(se.event.stream_id) or "")
        elif isinstance(k, LlmCallCompleted) and k.usage is not None:
            f.input_tokens += k.usage.input_tokens
            f.output_tokens += k.usage.output_tokens
            sums = f.usage_by_model.setdefault(models.get(step_of(se.event.stream_id) or "", ""), [0, 0, 0])
            sums[0] += k.usage.input_tokens
            sums[1] += k.usage.cached_input_tokens
            sums[2] += k.usage.output_tokens
        elif isinstance(k, ContextCompacted):
            f.compactions += 1
        elif isinstance(k, PipelineCompleted) and se.event.stream_id == stream_id and f.outcome == "running":
            f.outcome = "ok" if k.success else "FAIL"
            f.error, f.answer = k.error, k.final_output
        elif isinstance(k, ResumeForked) and se.event.stream_id == stream_id:
            f.fork_at_step = k.fork_at_step
            extra = k.engine_notes
            if isinstance(extra, dict) and isinstance(extra.get("knobs"), dict):
                f.knobs = extra["knobs"]
    return f


@dataclass(frozen=True)
class DiffPiece:
    op: str  # "same" | "del" | "ins"
    text: str


_WORD = re.compile(r"\s+|[^\s]+")


def answer_diff(old: str | None, new: str | None) -> list[DiffPiece]:
    """Word-level diff of two answers (whitespace kept, so the pieces join back to each answer)."""
    a, b = _WORD.findall(old or ""), _WORD.findall(new or "")
    out: list[DiffPiece] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(DiffPiece("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(DiffPiece("del", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(DiffPiece("ins", "".join(b[j1:j2])))
    return out


def figure_rows(
    parent: RunFigures, fork: RunFigures, prices: PriceTable | None = None, model: str | None = None
) -> list[tuple[str, str, str, str]]:
    """(figure, parent, fork, change) rows of the comparison table; cost when a price table is given."""

    def delta(a: int, b: int) -> str:
        if a == b:
            return "="
        pct = f" ({(b - a) / a:+.0%})" if a else ""
        return f"{b - a:+,}{pct}"

    def row(name: str, a: int, b: int) -> tuple[str, str, str, str]:
        return name, f"{a:,}", f"{b:,}", delta(a, b)

    rows = [
        ("outcome", parent.outcome, fork.outcome, "=" if parent.outcome == fork.outcome else "changed"),
        row("LLM calls", parent.calls, fork.calls),
        row("compaction calls", parent.compaction_calls, fork.compaction_calls),
        row("compactions", parent.compactions, fork.compactions),
        row("peak context (chars)", parent.peak, fork.peak),
        row("context sent (chars)", sum(parent.curve), sum(fork.curve)),
        row("input tokens (recorded)", parent.input_tokens, fork.input_tokens),
        row("output tokens (recorded)", parent.output_tokens, fork.output_tokens),
    ]
    if prices is not None:
        a, b = parent.cost(prices, model), fork.cost(prices, model)

        def money(x: float | None) -> str:
            return "no price" if x is None else f"{x:.4f} {prices.currency}"

        change = "=" if a == b else ("—" if a is None or b is None else f"{b - a:+.4f}")
        rows.append(("cost (recorded tokens)", money(a), money(b), change))
    return rows
