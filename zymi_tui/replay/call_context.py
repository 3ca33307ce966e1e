"""One LLM call as a replay rebuilds it (`CallContext`), what is known of its step, and the words a
replay's figures are labelled with (where the recorded knobs come from, the same-trajectory caveat)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import ContextKnobs, KnobError, make_knobs
from zymi_tui.context.rendered import CompactionPlan, Prefix, RenderedContext
from zymi_tui.context.reuse import PrefixReuse
from zymi_tui.context.splice import Rendering
from zymi_tui.errors import UserError
from zymi_tui.events.kinds import WorkflowNodeStarted
from zymi_tui.events.replay_view import TYPE_BY_TAG as TYPE_BY_TAG  # by the kind tags a replay reads

PAGE = 2000
# the kinds a replay reads: Layer C, the prefix and memory, failures (docs/context.md#layers, #memory, #hard-cap)
REPLAY_KINDS = tuple(TYPE_BY_TAG)
HARD_CAP_ERROR = re.compile(r"^\[(?P<step>[^\]]+)\] context build failed: context exceeds hard cap: (?P<n>\d+) chars")
DEFAULT_SUMMARY_RATIO = 0.10  # used only when the store has no recorded compaction to learn from
MAX_SUMMARY_BYTES = 4096  # a compaction reply is capped at max_tokens 1024 (~4 bytes/token)
SAME_TRAJECTORY = "what-if: assumes the same trajectory (the recorded tool calls and answers)"
# where a call's recorded knobs come from: the project's runtime.context, the store (our engine
# records them on each step's WorkflowNodeStarted), or nowhere (replayed under the engine defaults)
PROJECT_KNOBS, STORE_KNOBS, UNKNOWN_KNOBS = "project", "store", "unknown"
# a foreign agent's calls, taken in from its spans (docs/telemetry-in.md): zymi's builder never ran; the
# recorded context is what the agent sent, and the replay under the recorded knobs is its own history
# with nothing masked or dropped
AGENT_KNOBS = "agent"
AGENT_SENT = "sent by the agent (its spans): zymi's builder never ran for this call"


class ReplayError(UserError):
    """An unknown stream or sequence, or a prefix that cannot be known; one line for a person."""

    title = "Replay"


@dataclass
class CallContext:
    """One LLM call (or one failed build) of a store, with its rebuilt context."""

    stream_id: str
    sequence: int  # of the LlmCallStarted (a failed build: where it would have been)
    global_id: int
    iteration: int  # 0 = a compaction call
    is_compaction: bool
    recorded_chars: int  # a failed build: the total in the recorded error; a simulated call: 0
    recorded_message_count: int
    recorded_input_tokens: int | None  # usage of the matching LlmCallCompleted (includes cached)
    rendered: RenderedContext | None  # None when the prefix cannot be known (no project)
    prefix_inferred: bool
    hard_cap_failure: bool = False  # a recorded build that failed the hard cap (no LlmCallStarted)
    simulated: bool = False  # a what-if compaction with no recorded counterpart
    whatif: bool = False
    note: str = ""
    compaction_plan: CompactionPlan | None = None  # a compaction call: the span, range and bytes it covers
    prefix_basis: str | None = None  # Layer A inferred: how its size was found (the figures are estimates)
    knobs_source: str = UNKNOWN_KNOBS  # the recorded knobs: PROJECT_KNOBS, STORE_KNOBS, AGENT_KNOBS or UNKNOWN_KNOBS
    # usage of the matching LlmCallCompleted: provider-reported cache figures and output
    recorded_cached_tokens: int | None = None
    recorded_cache_creation_tokens: int | None = None
    recorded_output_tokens: int | None = None
    ts_ns: int | None = None  # the LlmCallStarted's timestamp (cache lifetimes)
    reuse: PrefixReuse | None = None  # an agent call: the prefix shared with the stream's previous agent call
    correlation_id: str | None = None  # the run the call belongs to
    finish_reason: str | None = None  # of the matching LlmCallCompleted
    done_ts_ns: int | None = None  # its timestamp
    pipeline: str | None = None
    _done: bool = field(default=False, repr=False)
    _drop: bool = field(default=False, repr=False)

    @property
    def chars(self) -> int | None:
        return None if self.rendered is None else self.rendered.chars

    @property
    def message_count(self) -> int | None:
        return None if self.rendered is None else self.rendered.message_count

    @property
    def foreign(self) -> bool:
        """A call of a foreign agent: its recorded figures are what it sent, not a zymi build."""
        return self.knobs_source == AGENT_KNOBS

    @property
    def guessed(self) -> list[str]:
        """What this call's rebuild guesses because no project (nor the store) says it."""
        return [what for what, yes in (("Layer A", self.prefix_inferred),
                                       ("the recorded knobs", self.knobs_source == UNKNOWN_KNOBS)) if yes]  # fmt: skip


class ClassCall(NamedTuple):
    """A row as a class of what-if knob sets replayed in lockstep sees it (replay/lockstep.py), for a
    caller that reads its figures only: the row, and its context's figures and prefix reuse under
    those knobs (no context made: `splice.figures_as`)."""

    row: CallContext
    rendering: RenderedContext | Rendering  # (the row's own context, with a prefix reuse of its own)
    reuse: PrefixReuse | bool  # a bool: whether it breaks the prefix, its figures not counted

    @property
    def global_id(self) -> int:
        return self.row.global_id

    @property
    def foreign(self) -> bool:
        return self.row.foreign


@dataclass(frozen=True)
class CallState:
    """A step stream's builder, its run's memory, and whether the last call was a compaction."""

    builder: ContextBuilder
    memory: list[tuple[str, str]]
    post_compaction: bool


@dataclass(frozen=True)
class StepDescription:
    """What our engine records on an agent step's WorkflowNodeStarted (extra field `zymi_tui`)."""

    prefix: Prefix
    fresh_cutoff_ns: int | None
    knobs: ContextKnobs | None
    origin: str | None = None  # "otel": a foreign agent's step, taken in from its spans


def self_described(kind: WorkflowNodeStarted) -> StepDescription | None:
    """The step's own description, when zymi-tui's engine wrote it (zymi's readers ignore the field)."""
    extra = kind.engine_notes
    if not isinstance(extra, dict) or not isinstance(extra.get("system_prompt"), str):
        return None
    try:
        knobs = make_knobs(extra["knobs"], "recorded knobs") if isinstance(extra.get("knobs"), dict) else None
    except KnobError:
        knobs = None
    cutoff = extra.get("fresh_cutoff_ns") if extra.get("context_mode") == "fresh" else None
    return StepDescription(
        Prefix(extra["system_prompt"], str(extra.get("task") or "")),
        cutoff if isinstance(cutoff, int) else None,
        knobs,
        str(extra["origin"]) if extra.get("origin") else None,
    )


def exceeds_hard_cap(row: CallContext) -> bool:
    """Whether the call's rebuilt context is over the hard cap (zymi fails such a call)."""
    return row.rendered is not None and row.rendered.hard_cap_exceeded
