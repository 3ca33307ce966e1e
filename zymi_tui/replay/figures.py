"""A profile's figures over a replayed store: each call's (`CallFigure`), made from its replayed context,
and their totals (`Totals`, per run stream and in total), tallied as the calls come (replay/tally.py) and priced.

A call whose re-rendered context equals the recorded one keeps the provider's reported tokens
(`recorded`); any other call is `estimated` as the recorded usage plus the change in bytes times the
store's tokens-per-byte ratio (calibrated on its own recorded calls, else the 0.28 heuristic of
docs/context.md#knobs). Compactions the recorded run never made need a summary from a model: they are
counted as simulated summary calls and always marked as estimates."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from zymi_tui.context.rendered import RenderedContext
from zymi_tui.context.reuse import PrefixReuse
from zymi_tui.context.splice import Rendering
from zymi_tui.events.kinds import LlmCallCompleted
from zymi_tui.events.store import EventReader, run_of
from zymi_tui.replay.call_context import CallContext, ClassCall
from zymi_tui.replay.costs import Cost

HEURISTIC_TOKENS_PER_BYTE = 0.28  # docs/context.md#knobs: "roughly chars x 0.28 = tokens for English"
SUMMARY_MAX_TOKENS = 1024  # zymi's compaction call: max_tokens 1024 (docs/context.md#compaction)


@dataclass
class RecordedOutput:
    """Output tokens the store reports: agent replies per run stream, and compaction replies."""

    agent_by_run: dict[str, int] = field(default_factory=dict)
    summary_tokens: int = 0
    summary_calls: int = 0

    @property
    def summary_mean(self) -> tuple[float, bool]:
        """Output tokens of one summary call, and whether that is a recorded mean (else a guess)."""
        if self.summary_calls:
            return self.summary_tokens / self.summary_calls, True
        return SUMMARY_MAX_TOKENS / 4, False

    def count(self, stream_id: str, source: str, kind: LlmCallCompleted) -> None:
        """One recorded completion's output tokens (none without usage)."""
        if kind.usage is None:
            return
        if source == "compaction":
            self.summary_tokens += kind.usage.output_tokens
            self.summary_calls += 1
        else:
            run = run_of(stream_id)
            self.agent_by_run[run] = self.agent_by_run.get(run, 0) + kind.usage.output_tokens


async def recorded_output(reader: EventReader, streams: Sequence[str] | None = None) -> RecordedOutput:
    """One pass over the store's LlmCallCompleted events (the kind index; no decoding of others)."""
    out = RecordedOutput()
    wanted = None if streams is None else set(streams)
    cursor = 0
    while True:
        page = await reader.read_kind_page("llm_call_completed", stream_id=None, after_global_id=cursor, limit=5000)
        if not page:
            return out
        cursor = page[-1].global_id
        for se in page:
            kind, ev = se.event.kind, se.event
            if isinstance(kind, LlmCallCompleted) and (wanted is None or ev.stream_id in wanted):
                out.count(ev.stream_id, ev.source, kind)


# -- figures -----------------------------------------------------------------------------------
@dataclass(slots=True)
class CallFigure:
    """One LLM call under one profile (slots: one is made per call and candidate class, and pass one keeps
    them below a million events)."""

    stream_id: str
    sequence: int
    global_id: int
    kind: str  # "agent" | "summary" (a recorded compaction call) | "simulated summary"
    chars: int
    message_count: int
    recorded_chars: int
    recorded_tokens: int | None
    over_soft: bool
    hard_cap_failed: bool
    tokens: int = 0
    tokens_provenance: str = "estimated"  # "recorded" | "estimated"
    ts_ns: int | None = None
    reuse_chars: int | None = None  # the prefix shared with the stream's previous agent call
    cache_break: bool = False  # an agent call that does not begin with its predecessor's whole list
    recorded_cached: int | None = None  # provider-reported cache reads / writes (recorded usage)
    recorded_cache_creation: int | None = None
    cached_modelled: int = 0  # the cache model's estimate (filled by `summarize`)
    cache_written_modelled: int = 0

    @property
    def sent(self) -> bool:
        return not self.hard_cap_failed

    @property
    def whole_previous(self) -> bool:
        return not self.cache_break


@dataclass
class Totals:
    """Sums over the calls of one run stream (or of the whole store) under one profile."""

    calls: int = 0
    agent_calls: int = 0
    chars_sum: int = 0
    chars_peak: int = 0
    tokens_sum: int = 0
    tokens_peak: int = 0
    tokens_estimated: int = 0  # how many calls' tokens are estimates
    over_soft_cap: int = 0
    compactions_recorded: int = 0
    compactions_simulated: int = 0  # estimates: a summary the recorded run never asked for
    hard_cap_failures: int = 0
    cache_breaks: int = 0  # agent calls that break the cached prefix of the stream's previous call
    cached_tokens_modelled: int = 0  # estimated: the cache model of the price table's family
    cache_write_tokens_modelled: int = 0
    cached_tokens_recorded: int = 0  # provider-reported, over calls whose tokens are the recorded ones
    cache_creation_tokens_recorded: int = 0
    cost: Cost | None = None  # the recorded cache usage priced where the provider reported it (else none)
    cost_estimated: bool = False
    cost_with_cache: Cost | None = None  # estimated: input priced with the modelled cache reads/writes
    cost_recorded_cache: Cost | None = None  # the recorded knobs only: priced with the recorded cache usage

    @property
    def provenance(self) -> str:
        return "estimated" if self.tokens_estimated or self.compactions_simulated else "recorded"

    def add(self, f: CallFigure) -> None:
        agent = f.kind == "agent"
        recorded = f.tokens_provenance == "recorded"
        cached, created = f.recorded_cached, f.recorded_cache_creation
        if not self.add_call(
            f.hard_cap_failed, f.chars, f.tokens, recorded, cached, created, agent, f.cache_break, f.over_soft
        ):
            return
        self.cached_tokens_modelled += f.cached_modelled
        self.cache_write_tokens_modelled += f.cache_written_modelled
        if agent:
            return
        if f.kind == "summary":
            self.compactions_recorded += 1
        else:
            self.compactions_simulated += 1

    def add_call(
        self, failed: bool, chars: int, tokens: int, recorded: bool, cached: int | None, created: int | None,
        agent: bool, cache_break: bool, over_soft: bool,
    ) -> bool:  # fmt: skip
        """A call's figures (`add`'s, less the cache model's and the kind of a compaction), with or without
        a `CallFigure` of them (`Tally.add_class`); whether it was sent (not failed)."""
        if failed:
            self.hard_cap_failures += 1
            return False
        self.calls += 1
        self.chars_sum += chars
        self.tokens_sum += tokens
        self.tokens_estimated += not recorded
        if recorded:  # the provider's cache usage holds for the tokens it reported
            self.cached_tokens_recorded += cached or 0
            self.cache_creation_tokens_recorded += created or 0
        if agent:
            self.cache_breaks += cache_break
            self.agent_calls += 1
            if chars > self.chars_peak:
                self.chars_peak = chars
            if tokens > self.tokens_peak:
                self.tokens_peak = tokens
            self.over_soft_cap += over_soft
        return True

    def add_totals(self, other: Totals) -> None:
        """Add the sums of another scope's calls (before any cost is priced)."""
        for name in _SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.chars_peak = max(self.chars_peak, other.chars_peak)
        self.tokens_peak = max(self.tokens_peak, other.tokens_peak)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("cost", "cost_with_cache", "cost_recorded_cache"):
            c: Cost | None = getattr(self, key)
            d[key] = None if c is None else {**asdict(c), "total": c.total}
        d["provenance"] = self.provenance
        return d


_SUMMED = tuple(
    f.name for f in fields(Totals) if f.type == "int" and f.name not in ("chars_peak", "tokens_peak")
)  # what `Totals.add_totals` adds up


@dataclass
class ProfileRun:
    """One profile's replay of the store."""

    name: str
    knobs: dict[str, int | None]
    recorded: bool  # True when these are the knobs the store was recorded under
    calls: list[CallFigure] = field(default_factory=list)
    foreign: bool = False  # some calls are a foreign agent's (spans): recorded = what it sent
    per_run: dict[str, Totals] = field(default_factory=dict)
    total: Totals = field(default_factory=Totals)


# -- building the figures ------------------------------------------------------------------------
def _cache_fields(f: CallFigure, call: CallContext) -> None:
    f.ts_ns = call.ts_ns
    f.recorded_cached, f.recorded_cache_creation = call.recorded_cached_tokens, call.recorded_cache_creation_tokens


def figure_chars(call: CallContext | ClassCall) -> int:
    """A call's size in its figures: rebuilt, else (no project) as recorded."""
    if isinstance(call, ClassCall):
        return call.rendering.chars
    return call.recorded_chars if call.rendered is None else call.rendered.chars


def call_figures(seen: CallContext | ClassCall, soft_cap: int) -> list[CallFigure]:
    """The figures of one replayed call (the replay already decided compactions and failures), as its
    knob set sees it: a row, or a lockstep class's figures of one."""
    r: RenderedContext | Rendering | None
    reuse: PrefixReuse | bool | None
    if isinstance(seen, ClassCall):
        call, r, reuse = seen
        chars = r.chars
    else:
        call, r, reuse = seen, seen.rendered, seen.reuse
        chars = figure_chars(call)
    count = call.recorded_message_count if r is None else r.message_count
    if call.hard_cap_failure:  # a recorded failed build: still a failure unless these knobs fit under the cap
        if r is not None and not r.hard_cap_exceeded:
            return []
        return [CallFigure(call.stream_id, call.sequence, call.global_id, "agent", chars, count, call.recorded_chars,
                           None, chars > soft_cap, True)]  # fmt: skip
    if call.is_compaction:
        kind = "simulated summary" if call.simulated else "summary"
        f = CallFigure(call.stream_id, call.sequence, call.global_id, kind, chars, count, call.recorded_chars,
                       call.recorded_input_tokens, False, False)  # fmt: skip
        _cache_fields(f, call)
        return [f]
    failed = r is not None and r.hard_cap_exceeded
    f = CallFigure(call.stream_id, call.sequence, call.global_id, "agent", chars, count, call.recorded_chars,
                   call.recorded_input_tokens, chars > soft_cap, failed)  # fmt: skip
    _cache_fields(f, call)
    if reuse is not None:
        f.cache_break = breaks(reuse)
        if not isinstance(reuse, bool):
            f.reuse_chars = reuse.chars
    return [f]


def breaks(reuse: PrefixReuse | bool) -> bool:
    """Whether a call breaks its stream's cached prefix: by its reuse, or the bool that stands for it."""
    return reuse if isinstance(reuse, bool) else reuse.broken is not None


def calibrate(calls: Iterable[CallFigure]) -> tuple[float, str]:
    """Tokens per byte over the recorded calls that reported usage, else the 0.28 heuristic."""
    return ratio_of(*recorded_sums(calls))


def recorded_sums(calls: Iterable[CallFigure]) -> tuple[int, int, int]:
    """How many calls reported usage, and their recorded bytes and tokens (what `calibrate` uses)."""
    n = chars = tokens = 0
    for f in calls:
        if f.recorded_tokens is not None and f.recorded_chars > 0:
            n += 1
            chars += f.recorded_chars
            tokens += f.recorded_tokens
    return n, chars, tokens


def ratio_of(n: int, chars: int, tokens: int) -> tuple[float, str]:
    if n == 0 or chars == 0:
        return HEURISTIC_TOKENS_PER_BYTE, f"heuristic {HEURISTIC_TOKENS_PER_BYTE}"
    return tokens / chars, f"calibrated on {n} recorded call(s)"


def tokens_recorded(f: CallFigure) -> bool:
    """Whether the call's tokens are the ones recorded (it is sent as recorded): none estimated."""
    return sent_as_recorded(f.chars, f.recorded_chars, f.recorded_tokens, f.kind == "simulated summary")


def sent_as_recorded(chars: int, recorded_chars: int, recorded_tokens: int | None, simulated: bool) -> bool:
    """Whether a call of `chars` bytes is sent as recorded, its tokens known (a `simulated` summary never is)."""
    return recorded_tokens is not None and chars == recorded_chars and not simulated


def estimate_tokens(f: CallFigure, ratio: float) -> None:
    f.tokens, recorded = tokens_of(ratio, f.chars, f.recorded_chars, f.recorded_tokens, f.kind == "simulated summary")
    f.tokens_provenance = "recorded" if recorded else "estimated"


def tokens_of(
    ratio: float, chars: int, recorded_chars: int, recorded_tokens: int | None, simulated: bool = False
) -> tuple[int, bool]:
    """A call's tokens, and whether they are the ones recorded (`sent_as_recorded`: none estimated); else
    estimated as `tokens_at` does."""
    if recorded_tokens is not None and sent_as_recorded(chars, recorded_chars, recorded_tokens, simulated):
        return recorded_tokens, True
    return tokens_at(ratio, chars, recorded_chars, None if simulated else recorded_tokens), False


def tokens_at(ratio: float, chars: int, recorded_chars: int, recorded_tokens: int | None) -> int:
    """The estimated tokens of a call of `chars` bytes: its recorded tokens (None: none, or a simulated
    summary's) corrected for the bytes it differs by from the recorded ones, else its bytes at `ratio`."""
    if recorded_tokens is not None:
        return max(0, round(recorded_tokens + (chars - recorded_chars) * ratio))
    return round(chars * ratio)
