"""`advise`: what to change, read off a store, its project and a replay.

Each finding has a stable `signal` id, the evidence (calls, figures), a recommended change of the
knobs or of a step's `context.mode`, and that change's effect replayed on this store (the same
comparison `zymi-tui compare` makes, so the figures agree with it), under the same-trajectory
caveat. Signals whose fix is not a knob (tools, the provider) say so and give the figure instead.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zymi_tui.context.knobs import PROFILES, ContextKnobs, make_knobs
from zymi_tui.events.kinds import ContextCompacted, ToolCallRequested
from zymi_tui.events.messages import AssistantMessage, SystemMessage, ToolResultMessage
from zymi_tui.events.store import STEP_MARK, EventReader
from zymi_tui.project.reader import read_project
from zymi_tui.replay.cache import predict
from zymi_tui.replay.calls import CallContext, recorded_knobs
from zymi_tui.replay.compare import (
    CAVEAT,
    Comparison,
    ProfileCalls,
    Totals,
    compare_profiles,
    knob_dict,
    recorded_output,
    replay_profiles,
)
from zymi_tui.replay.costs import Cost, PriceTable, cost_of

NEAR_MISS = 0.10  # a call within 10% of the hard cap
LARGE_RESULT_SHARE = 0.25  # a tool result above this share of the soft cap
DOMINANT_SHARE = 0.5  # one tool's results above this share of all input bytes
CACHE_BREAK_SHARE = 0.5  # most calls break the cached prefix
MIN_CALLS_FOR_GROWTH = 6
CHAT_TURNS = 4  # a stream with this many user turns is a chat
KnobDict = dict[str, int | None]
ToolBytes = Callable[[str], int | None]  # a tool's definition as sent (JSON bytes), None: unknown


@dataclass
class Effect:
    """A recommendation replayed on this store, beside the recorded knobs' figures."""

    profile: str
    tokens_sum: int
    tokens_sum_before: int
    compactions: int
    compactions_before: int
    hard_cap_failures: int
    hard_cap_failures_before: int
    chars_peak: int
    chars_peak_before: int
    hard_cap_chars: int
    cache_breaks: int
    cache_breaks_before: int
    cost_with_cache: float | None
    cost_with_cache_before: float | None
    provenance: str = "estimated"

    @property
    def hard_cap_risk(self) -> float:
        """The peak as a share of the hard cap."""
        return self.chars_peak / self.hard_cap_chars if self.hard_cap_chars else 0.0


@dataclass
class Recommendation:
    text: str
    knobs: KnobDict | None = None  # the whole knob set to try (None: not a knob change)
    step: str | None = None  # `pipeline/step` whose context.mode to change
    mode: str | None = None
    effect: Effect | None = None
    not_replayed: str | None = None  # why there is no replayed effect
    candidates: list[KnobDict] = field(default_factory=list, repr=False)  # tried in order; the best is kept


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
class Advice:
    findings: list[Finding]
    knobs: KnobDict
    model: str | None
    price_entry: str | None
    cache_family: str | None
    calls: int
    caveat: str = CAVEAT


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


# -- reading ----------------------------------------------------------------------------------
@dataclass
class _StoreFacts:
    negative: list[tuple[str, int, int]] = field(default_factory=list)  # (stream, seq, bytes_saved)
    tools_called: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # step stream -> tools


async def _store_facts(reader: EventReader) -> _StoreFacts:
    facts = _StoreFacts()
    for tag in (ContextCompacted.TAG, ToolCallRequested.TAG):
        cursor = 0
        while True:
            page = await reader.read_kind_page(tag, stream_id=None, after_global_id=cursor, limit=5000)
            if not page:
                break
            cursor = page[-1].global_id
            for se in page:
                kind, ev = se.event.kind, se.event
                if isinstance(kind, ContextCompacted) and kind.bytes_saved < 0:
                    facts.negative.append((ev.stream_id, ev.sequence, kind.bytes_saved))
                elif isinstance(kind, ToolCallRequested):
                    facts.tools_called[ev.stream_id].add(kind.tool_name)
    return facts


def _sent(rows: Sequence[CallContext]) -> list[CallContext]:
    return [
        r
        for r in rows
        if not r.is_compaction
        and not r.hard_cap_failure
        and r.rendered is not None
        and not r.rendered.hard_cap_exceeded
    ]


def _by_stream(rows: Sequence[CallContext]) -> dict[str, list[CallContext]]:
    out: dict[str, list[CallContext]] = defaultdict(list)
    for r in rows:
        out[r.stream_id].append(r)
    return out


def _step(stream: str) -> str:
    return stream.split(STEP_MARK, 1)[1] if STEP_MARK in stream else stream


def _user_turns(calls: Sequence[CallContext]) -> int:
    """Runs of a step stream that began with a new task (a chat's user turns)."""
    return len({c.correlation_id for c in calls if c.correlation_id is not None})


def _chars(r: CallContext) -> int:
    return r.rendered.chars if r.rendered is not None else r.recorded_chars


# -- the signals ------------------------------------------------------------------------------
class _Advisor:
    def __init__(
        self,
        rows: list[CallContext],
        cmp: Comparison,
        base: ContextKnobs,
        facts: ProjectFacts,
        store: _StoreFacts,
        tool_bytes: ToolBytes | None,
        prices: PriceTable | None,
    ) -> None:
        self.rows, self.cmp, self.base, self.facts, self.store = rows, cmp, base, facts, store
        self.tool_bytes, self.prices = tool_bytes, prices
        self.sent = _sent(rows)
        self.streams = _by_stream(self.sent)
        self.kd = knob_dict(base)
        self.compacted_streams = {r.stream_id for r in rows if r.is_compaction}
        self._entries_walk: tuple[dict[str, int], dict[str, int], int] | None = None

    def knobs(self, **change: int | None) -> KnobDict:
        k = {**self.kd, **change}
        if (k["hard_cap_chars"] or 0) < (k["soft_cap_chars"] or 0):
            k["hard_cap_chars"] = k["soft_cap_chars"]
        return k

    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        for detect in (
            self.hard_cap_exceeded,
            self.hard_cap_near_miss,
            self.knobs_not_biting,
            self.negative_bytes_saved,
            self.chat_under_coding_defaults,
            self.runtime_context_unset,
            self.dominant_tool,
            self.large_tool_result,
            self.cache_breaks,
            self.anthropic_no_cache,
            self.anthropic_system_overwritten,
            self.fresh_mode_candidate,
            self.unused_tools,
        ):
            out += detect()
        return out

    # each detector returns zero or more findings
    def hard_cap_exceeded(self) -> list[Finding]:
        failed = [r for r in self.rows if r.hard_cap_failure and r.recorded_chars]
        if not failed:
            return []
        first = failed[0]
        w, t, soft = self.base.observation_window, self.base.min_tail_turns, self.base.soft_cap_chars
        cands = [
            self.knobs(observation_window=max(1, w // 2)),
            self.knobs(min_tail_turns=max(1, t // 2)),
            self.knobs(observation_window=max(1, w // 2), min_tail_turns=max(1, t // 2)),
            self.knobs(soft_cap_chars=max(1, soft // 2)),
            self.knobs(observation_window=1, min_tail_turns=1),
            self.knobs(
                hard_cap_chars=max(self.base.hard_cap_chars, round(max(r.recorded_chars for r in failed) * 1.1))
            ),
        ]
        return [
            Finding(
                "hard_cap_exceeded",
                f"{len(failed)} context build(s) exceeded the hard cap ({self.base.hard_cap_chars:,} bytes): "
                "the step failed there",
                [
                    f"{r.stream_id} seq {r.sequence}: {r.recorded_chars:,} bytes > {self.base.hard_cap_chars:,}"
                    for r in failed[:5]
                ],
                {
                    "calls": [[r.stream_id, r.sequence, r.recorded_chars] for r in failed],
                    "hard_cap_chars": self.base.hard_cap_chars,
                },
                first.stream_id,
                first.sequence,
                Recommendation(
                    "mask and compact more so the tail fits under the hard cap (the first of these knob sets "
                    "that replays with no hard-cap failure)",
                    candidates=cands,
                ),
            )
        ]

    def hard_cap_near_miss(self) -> list[Finding]:
        hard = self.base.hard_cap_chars
        near = [r for r in self.sent if hard and _chars(r) >= (1 - NEAR_MISS) * hard]
        if not near:
            return []
        top = max(near, key=_chars)
        soft, w, t = self.base.soft_cap_chars, self.base.observation_window, self.base.min_tail_turns
        options = [
            self.knobs(soft_cap_chars=min(soft, hard // 2)),
            self.knobs(observation_window=max(1, w // 2)),
            self.knobs(observation_window=max(1, w // 2), min_tail_turns=max(1, t // 2)),
            self.knobs(observation_window=1, min_tail_turns=1),
        ]
        cands = [c for c in options if c != self.kd]
        return [
            Finding(
                "hard_cap_near_miss",
                f"{len(near)} call(s) came within {NEAR_MISS:.0%} of the hard cap ({hard:,} bytes); "
                f"peak {_chars(top):,} ({_chars(top) / hard:.0%})",
                [
                    f"{r.stream_id} seq {r.sequence}: {_chars(r):,} bytes ({_chars(r) / hard:.0%} of the hard cap)"
                    for r in near[:5]
                ],
                {"calls": [[r.stream_id, r.sequence, _chars(r)] for r in near], "hard_cap_chars": hard},
                top.stream_id,
                top.sequence,
                Recommendation("compact earlier or mask sooner, to keep a margin under the hard cap", candidates=cands),
            )
        ]

    def knobs_not_biting(self) -> list[Finding]:
        out = []
        for stream, calls in self.streams.items():
            if len(calls) < MIN_CALLS_FOR_GROWTH:
                continue
            shapes = [c.rendered.shape for c in calls if c.rendered is not None and c.rendered.shape is not None]
            masked = any(s.mask_end > s.cut for s in shapes)
            forgotten = any(c.rendered is not None and c.rendered.forgotten for c in calls)
            compacted = (
                any(c.rendered is not None and c.rendered.compacted_away for c in calls)
                or stream in self.compacted_streams
            )
            if masked or forgotten or compacted:
                continue
            ys = [_chars(c) for c in calls]
            r2, slope = _linear_fit(ys)
            if slope <= 0 or r2 < 0.8 or ys[-1] < 2 * max(ys[0], 1):
                continue
            turns = len(shapes[-1].tail.turn_starts) if shapes else 0
            w = max(2, min(self.base.observation_window - 1, turns // 2))
            out.append(
                Finding(
                    "knobs_not_biting",
                    f"{stream}: the context grows linearly ({ys[0]:,} → {ys[-1]:,} bytes over {len(calls)} calls, "
                    f"~{slope:,.0f} bytes/call, R² {r2:.2f}) with no masking, forgetting or compaction in effect",
                    [
                        f"{len(calls)} agent calls, {turns} turns, observation_window={self.base.observation_window}, "
                        f"soft cap {self.base.soft_cap_chars:,}"
                    ],
                    {
                        "stream_id": stream,
                        "first_chars": ys[0],
                        "last_chars": ys[-1],
                        "slope": round(slope, 1),
                        "r2": round(r2, 3),
                        "turns": turns,
                    },
                    stream,
                    calls[-1].sequence,
                    Recommendation(
                        f"lower observation_window to {w} so older tool results are masked",
                        candidates=[self.knobs(observation_window=w)],
                    ),
                )
            )
        return out

    def negative_bytes_saved(self) -> list[Finding]:
        neg = self.store.negative
        if not neg:
            return []
        soft = self.base.soft_cap_chars
        new_soft = max(1, soft * 3 // 4)
        return [
            Finding(
                "negative_bytes_saved",
                f"{len(neg)} compaction(s) returned a summary larger than what it replaced",
                [f"{s} seq {q}: bytes_saved {b:,}" for s, q, b in neg[:5]],
                {"compactions": [[s, q, b] for s, q, b in neg]},
                neg[0][0],
                neg[0][1],
                Recommendation(
                    f"lower soft_cap_chars to {new_soft:,} (zymi's context guide)",
                    candidates=[self.knobs(soft_cap_chars=new_soft)],
                ),
            )
        ]

    def _chat_streams(self) -> list[tuple[str, int]]:
        return [(s, n) for s, calls in self.streams.items() if (n := _user_turns(calls)) >= CHAT_TURNS]

    def chat_under_coding_defaults(self) -> list[Finding]:
        chats = self._chat_streams()
        coding = PROFILES["coding"]
        if not chats or self.base.forget_after_turns is not None or self.base.soft_cap_chars < coding.soft_cap_chars:
            return []
        stream, turns = max(chats, key=lambda x: x[1])
        return [
            Finding(
                "chat_under_coding_defaults",
                f"{stream}: a chat of {turns} user turns runs with no forget_after_turns and coding-size caps "
                f"(soft {self.base.soft_cap_chars:,})",
                [f"{s}: {n} user turns" for s, n in chats[:5]],
                {"streams": [[s, n] for s, n in chats], "knobs": self.kd},
                stream,
                self.streams[stream][-1].sequence,
                Recommendation(
                    "use the chat profile (forget_after_turns, chat-size caps)",
                    candidates=[knob_dict(PROFILES["chat"])],
                ),
            )
        ]

    def runtime_context_unset(self) -> list[Finding]:
        if self.facts.has_runtime_context:
            return []
        chat = bool(self._chat_streams())
        name = "chat" if chat else "coding"
        return [
            Finding(
                "runtime_context_unset",
                "project.yml has no runtime.context block: every run uses the engine defaults "
                f"({ContextKnobs().describe()})",
                ["runtime.context absent from project.yml"],
                {"suggested_profile": name},
                recommendation=Recommendation(
                    f"write runtime.context with the {name} profile's knobs"
                    + (
                        "" if chat else " (the engine defaults: the figures do not change, the policy becomes explicit)"
                    ),
                    candidates=[knob_dict(PROFILES[name])],
                ),
            )
        ]

    def _walk(self) -> tuple[dict[str, int], dict[str, int], int]:
        """Per tool: bytes of its results as sent, summed over calls, and their rent (bytes x calls in full)."""
        if self._entries_walk is None:
            sent_bytes: Counter[str] = Counter()
            rent: Counter[str] = Counter()
            total = 0
            for calls in self.streams.values():
                names: dict[str, str] = {}
                for c in calls:
                    assert c.rendered is not None
                    total += c.rendered.chars
                    for e in c.rendered.entries:
                        m = e.message
                        if isinstance(m, AssistantMessage):
                            names.update((tc.id, tc.name) for tc in m.tool_calls)
                        elif isinstance(m, ToolResultMessage):
                            tool = names.get(m.tool_call_id, "unknown")
                            sent_bytes[tool] += e.bytes
                            if not e.reason.startswith("masked"):
                                rent[tool] += e.bytes
            self._entries_walk = (dict(sent_bytes), dict(rent), total)
        return self._entries_walk

    def dominant_tool(self) -> list[Finding]:
        sent_bytes, rent, total = self._walk()
        if not sent_bytes or not total:
            return []
        tool, nbytes = max(sent_bytes.items(), key=lambda kv: kv[1])
        share = nbytes / total
        if share < DOMINANT_SHARE:
            return []
        w = max(1, self.base.observation_window // 2)
        return [
            Finding(
                "dominant_tool",
                f"{tool}'s results are {share:.0%} of all input bytes ({nbytes:,} of {total:,}); "
                f"rent {rent.get(tool, 0):,} bytes (bytes x calls carried in full)",
                [
                    f"{t}: {b:,} bytes ({b / total:.0%})"
                    for t, b in sorted(sent_bytes.items(), key=lambda kv: -kv[1])[:5]
                ],
                {
                    "tool": tool,
                    "bytes": nbytes,
                    "share": round(share, 4),
                    "rent_bytes": rent.get(tool, 0),
                    "by_tool": sent_bytes,
                },
                recommendation=Recommendation(
                    f"mask {tool}'s results sooner: observation_window {w} (or cut the tool's output at the source)",
                    candidates=[self.knobs(observation_window=w)],
                ),
            )
        ]

    def large_tool_result(self) -> list[Finding]:
        soft = self.base.soft_cap_chars
        limit = LARGE_RESULT_SHARE * soft
        big: dict[tuple[str, int], int] = {}
        for stream, calls in self.streams.items():
            tails = {id(s.tail): s.tail for c in calls if c.rendered is not None and (s := c.rendered.shape)}
            for tail in tails.values():  # every tool result the stream ever carried, at its full size
                for raw in tail.items:
                    if isinstance(raw.message, ToolResultMessage) and raw.bytes > limit and not raw.simulated:
                        big[(stream, raw.seq)] = raw.bytes
        if not big:
            return []
        (stream, seq), nbytes = max(big.items(), key=lambda kv: kv[1])
        w = max(1, self.base.observation_window // 2)
        return [
            Finding(
                "large_tool_result",
                f"{len(big)} tool result(s) above {LARGE_RESULT_SHARE:.0%} of the soft cap ({soft:,} bytes); "
                f"the largest: {nbytes:,} bytes ({nbytes / soft:.0%}) at {stream} seq {seq}",
                [f"{s} seq {q}: {b:,} bytes" for (s, q), b in sorted(big.items(), key=lambda kv: -kv[1])[:5]],
                {"results": [[s, q, b] for (s, q), b in big.items()], "soft_cap_chars": soft},
                stream,
                next((c.sequence for c in self.streams[stream] if c.sequence > seq), self.streams[stream][-1].sequence),
                Recommendation(
                    f"limit the tool's output at the source, or mask sooner: observation_window {w}",
                    candidates=[self.knobs(observation_window=w)],
                ),
            )
        ]

    def cache_breaks(self) -> list[Finding]:
        eligible = [c for c in self.sent if c.reuse is not None and _has_previous(c)]
        broken = [c for c in eligible if _cause_kind(c) in POLICY_CAUSES]
        if not eligible or len(broken) / len(eligible) < CACHE_BREAK_SHARE:
            return []
        causes = Counter(_cause_kind(c) for c in broken)
        worst = min(broken, key=lambda c: c.reuse.messages if c.reuse else 0)
        k = self.base
        cands = {
            "masked": [self.knobs(observation_window=k.observation_window * m) for m in (2, 3)],
            "forgotten": [self.knobs(forget_after_turns=(k.forget_after_turns or 0) * m) for m in (2, 3)],
            "compaction": [
                self.knobs(
                    soft_cap_chars=k.soft_cap_chars * m, hard_cap_chars=max(k.hard_cap_chars, k.soft_cap_chars * m)
                )
                for m in (2, 3)
            ],
        }[causes.most_common(1)[0][0]]
        total = self.cmp.profiles[0].total
        cost = "" if total.cost_with_cache is None else f"; cost with cache {total.cost_with_cache.total:.4f} (est.)"
        return [
            Finding(
                "cache_breaks",
                f"the context policy breaks the cached prefix on {len(broken)} of {len(eligible)} agent calls{cost}",
                [f"{n} x {POLICY_CAUSES[cause]}" for cause, n in causes.most_common()],
                {
                    "broken": len(broken),
                    "eligible": len(eligible),
                    "causes": dict(causes),
                    "calls": [[c.stream_id, c.sequence, c.reuse.messages if c.reuse else 0] for c in broken[:50]],
                },
                worst.stream_id,
                worst.sequence,
                Recommendation(
                    f"{POLICY_FIX[causes.most_common(1)[0][0]]} (of two values tried, the one that costs least with "
                    "cache, else breaks least)",
                    candidates=cands,
                ),
            )
        ]

    def _anthropic(self) -> bool:
        return self.facts.provider == "anthropic"

    def anthropic_no_cache(self) -> list[Finding]:
        if not self._anthropic():
            return []
        p = self.cmp.profiles[0]
        fam = self.prices.cache_family(self.cmp.model, "anthropic") if self.prices else None
        if fam is None:
            return []
        preds = predict([f for f in p.calls if f.sent], fam[1], breakpoints=True)
        read, written = sum(x.cached for x in preds), sum(x.written for x in preds)
        figures: dict[str, Any] = {
            "tokens": p.total.tokens_sum,
            "cached_with_breakpoints": read,
            "written_with_breakpoints": written,
        }
        money = ""
        found = self.prices.price_for(self.cmp.model) if self.prices else None
        if found is not None and self.prices is not None:
            out_cost = p.total.cost.output if p.total.cost is not None else 0.0
            with_bp = cost_of(
                self.prices,
                found[1],
                input_tokens=p.total.tokens_sum,
                cached_input_tokens=read,
                cache_creation_tokens=written,
                family=fam[1],
            )
            now = cost_of(self.prices, found[1], input_tokens=p.total.tokens_sum)
            figures |= {
                "cost_now": round(now.total + out_cost, 6),
                "cost_with_breakpoints": round(with_bp.total + out_cost, 6),
            }
            money = f"; cost {now.total + out_cost:.4f} now, {with_bp.total + out_cost:.4f} with breakpoints (est.)"
        return [
            Finding(
                "anthropic_no_cache",
                "zymi's Anthropic provider sends no cache_control breakpoint: no prefix is ever cached "
                f"({p.total.tokens_sum:,} input tokens all billed fresh){money}",
                [
                    f"a breakpoint at the end of each request would read ~{read:,} tokens from the cache and "
                    f"write ~{written:,} (estimated)"
                ],
                figures,
                recommendation=Recommendation(
                    "send a cache_control breakpoint (not a knob: a provider change, or a gateway that adds one)",
                    not_replayed="a provider change, not a knob: the figures above are the cache model's estimate",
                ),
            )
        ]

    def anthropic_system_overwritten(self) -> list[Finding]:
        if not self._anthropic():
            return []
        hit = []
        for c in self.sent:
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

    def fresh_mode_candidate(self) -> list[Finding]:
        out = []
        for stream, calls in self.streams.items():
            pipeline = calls[0].pipeline
            step = _step(stream)
            if pipeline is None or (pipeline, step) in self.facts.fresh_steps:
                continue
            carried, retrieval, runs = 0, 0, 0
            seen_runs: set[str | None] = set()
            first_of_later: CallContext | None = None
            for c in calls:
                if c.correlation_id in seen_runs:
                    continue
                seen_runs.add(c.correlation_id)
                if len(seen_runs) == 1:
                    continue
                assert c.rendered is not None
                tool_bytes = sum(
                    e.bytes for e in c.rendered.entries if e.layer == "C" and isinstance(e.message, ToolResultMessage)
                )
                carried += c.rendered.layer_bytes.get("C", 0)
                retrieval += tool_bytes
                runs += 1
                first_of_later = first_of_later or c
            if runs == 0 or not carried or retrieval / carried < 0.5 or first_of_later is None:
                continue
            out.append(
                Finding(
                    "fresh_mode_candidate",
                    f"{pipeline}/{step}: {runs} later run(s) start with {carried:,} bytes of earlier runs' Layer C, "
                    f"{retrieval / carried:.0%} of it tool results",
                    [f"{stream}: first call of each later run carries {carried // runs:,} bytes on average"],
                    {"stream_id": stream, "runs": runs + 1, "carried_bytes": carried, "tool_result_bytes": retrieval},
                    stream,
                    first_of_later.sequence,
                    Recommendation(
                        f"give step `{step}` of pipeline `{pipeline}` context: {{mode: fresh}}",
                        step=f"{pipeline}/{step}",
                        mode="fresh",
                        not_replayed="a step's context.mode is not a knob: fork a run with `zymi-tui resume` "
                        "after editing the pipeline to see it",
                    ),
                )
            )
        return out

    def unused_tools(self) -> list[Finding]:
        out = []
        calls_per_step: Counter[tuple[str, str]] = Counter()
        called: dict[tuple[str, str], set[str]] = defaultdict(set)
        for stream, calls in self.streams.items():
            if calls[0].pipeline is None:
                continue
            key = (calls[0].pipeline, _step(stream))
            calls_per_step[key] += len(calls)
            called[key] |= self.store.tools_called.get(stream, set())
        for key, n in sorted(calls_per_step.items()):
            agent = self.facts.step_agent.get(key)
            tools = self.facts.agent_tools.get(agent or "", ())
            unused = [t for t in tools if t not in called[key]]
            if not unused:
                continue
            sizes = {t: (self.tool_bytes(t) if self.tool_bytes else None) for t in unused}
            known = sum(v for v in sizes.values() if v)
            out.append(
                Finding(
                    "unused_tools",
                    f"{key[0]}/{key[1]}: {len(unused)} tool definition(s) sent on all {n} calls, never called: "
                    f"{', '.join(unused)}" + (f" ({known:,} bytes x {n} calls = {known * n:,} bytes)" if known else ""),
                    [f"{t}: {'?' if b is None else f'{b:,}'} bytes per call" for t, b in sizes.items()],
                    {
                        "step": f"{key[0]}/{key[1]}",
                        "agent": agent,
                        "unused": unused,
                        "calls": n,
                        "bytes_per_call": known,
                        "bytes_total": known * n,
                    },
                    recommendation=Recommendation(
                        f"remove {', '.join(unused)} from agent `{agent}`'s tools",
                        not_replayed="tool definitions are not counted in approx_context_chars; "
                        f"they add ~{known * n:,} bytes of input over the store",
                    ),
                )
            )
        return out


def _has_previous(c: CallContext) -> bool:
    return c.reuse is not None and not (c.reuse.messages == 0 and c.reuse.broken is None)


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


def _cause_kind(c: CallContext) -> str:
    """What broke the call's prefix: one of POLICY_CAUSES, or another word (task, memory, none)."""
    b = c.reuse.broken if c.reuse else None
    if b is None:
        return "none"
    return b.cause.split(" ", 1)[0]


def _linear_fit(ys: Sequence[int]) -> tuple[float, float]:
    """R² and slope of ys against their index."""
    n = len(ys)
    mx = (n - 1) / 2
    my = sum(ys) / n
    sxx = sum((i - mx) ** 2 for i in range(n))
    sxy = sum((i - mx) * (y - my) for i, y in enumerate(ys))
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return 0.0, 0.0
    slope = sxy / sxx
    return (sxy * sxy) / (sxx * syy), slope


# -- the whole run -----------------------------------------------------------------------------
def _cost_total(c: Cost | None) -> float | None:
    return None if c is None else round(c.total, 6)


def _effect(name: str, after: Totals, before: Totals, knobs: KnobDict) -> Effect:
    return Effect(
        profile=name,
        tokens_sum=after.tokens_sum,
        tokens_sum_before=before.tokens_sum,
        compactions=after.compactions_recorded + after.compactions_simulated,
        compactions_before=before.compactions_recorded + before.compactions_simulated,
        hard_cap_failures=after.hard_cap_failures,
        hard_cap_failures_before=before.hard_cap_failures,
        chars_peak=after.chars_peak,
        chars_peak_before=before.chars_peak,
        hard_cap_chars=int(knobs["hard_cap_chars"] or 0),
        cache_breaks=after.cache_breaks,
        cache_breaks_before=before.cache_breaks,
        cost_with_cache=_cost_total(after.cost_with_cache),
        cost_with_cache_before=_cost_total(before.cost_with_cache),
        provenance=after.provenance,
    )


def _choose(signal: str, options: list[tuple[KnobDict, Totals]]) -> tuple[KnobDict, Totals]:
    """The candidate that best answers the signal."""
    if signal == "hard_cap_exceeded":  # the first (smallest) change that removes every failure
        ok = [o for o in options if o[1].hard_cap_failures == 0]
        return ok[0] if ok else options[0]
    if signal == "hard_cap_near_miss":
        ok = [
            o
            for o in options
            if o[1].hard_cap_failures == 0 and o[1].chars_peak < (1 - NEAR_MISS) * int(o[0]["hard_cap_chars"] or 0)
        ]
        return ok[0] if ok else min(options, key=lambda o: o[1].chars_peak)
    if signal == "cache_breaks":

        def key(o: tuple[KnobDict, Totals]) -> tuple[float, int]:
            c = o[1].cost_with_cache
            return (c.total if c is not None else 0.0, o[1].cache_breaks)

        return min(options, key=key)
    return options[0]


def profile_name(knobs: KnobDict) -> str:
    """A stable name for a knob set (the name `compare` would be given)."""
    forget = "off" if knobs["forget_after_turns"] is None else knobs["forget_after_turns"]
    return (
        f"w{knobs['observation_window']}-s{knobs['soft_cap_chars']}-h{knobs['hard_cap_chars']}"
        f"-t{knobs['min_tail_turns']}-f{forget}"
    )


async def advise(
    reader: EventReader,
    project: Path | None,
    *,
    prices: PriceTable | None = None,
    model: str | None = None,
    tool_bytes: ToolBytes | None = None,
    streams: Sequence[str] | None = None,
) -> Advice:
    """Read the store, replay it under the recorded knobs, detect the signals, and replay every
    recommendation (two passes over the store)."""
    base = recorded_knobs(project)
    kd = knob_dict(base)
    facts = project_facts(project)
    model = model or facts.model
    output = await recorded_output(reader, streams)
    rows: list[CallContext] = []

    async def tee() -> ProfileCalls:
        async for i, call in replay_profiles(reader, project, [("recorded", None)], streams):
            rows.append(call)
            yield i, call

    common: dict[str, Any] = {
        "recorded_knobs": base,
        "prices": prices,
        "model": model,
        "provider": facts.provider,
        "output": output,
    }
    cmp0 = await compare_profiles(tee(), [("recorded", None)], **common)
    advisor = _Advisor(rows, cmp0, base, facts, await _store_facts(reader), tool_bytes, prices)
    findings = advisor.findings()
    candidates: dict[str, KnobDict] = {}
    for f in findings:
        for k in f.recommendation.candidates if f.recommendation else []:
            if k != kd:  # the recorded knobs' figures are pass one's
                candidates.setdefault(profile_name(k), k)
    totals = {"recorded": cmp0.profiles[0].total, profile_name(kd): cmp0.profiles[0].total}
    if candidates:
        tried: list[tuple[str, ContextKnobs | None]] = [
            (n, make_knobs(dict(k), f"advice {n}")) for n, k in candidates.items()
        ]
        profiles: list[tuple[str, ContextKnobs | None]] = [("recorded", None), *tried]

        async def calls() -> ProfileCalls:  # the recorded rows of pass one, then every candidate in one pass
            for row in rows:
                yield 0, row
            async for i, call in replay_profiles(reader, project, tried, streams):
                yield i + 1, call

        cmp = await compare_profiles(calls(), profiles, **common)
        totals |= {p.name: p.total for p in cmp.profiles[1:]}
    before = totals["recorded"]
    for f in findings:
        rec = f.recommendation
        if rec is None or not rec.candidates:
            continue
        knobs, after = _choose(f.signal, [(k, totals[profile_name(k)]) for k in rec.candidates])
        rec.knobs = knobs
        rec.effect = _effect(profile_name(knobs), after, before, knobs)
    found = prices.price_for(model) if prices is not None else None
    advice = Advice(findings, kd, model, found[0] if found else None, cmp0.cache_family, len(advisor.sent))
    advice.caveat += foreign_caveat(rows)
    return advice


def foreign_caveat(rows: Sequence[CallContext]) -> str:
    """What the figures mean for a foreign agent's calls (spans: docs/telemetry-in.md#recorded-and-what-if)."""
    foreign = [r for r in rows if r.foreign and not r.is_compaction and not r.hard_cap_failure]
    if not foreign:
        return ""
    rewritten = sum(r.rendered is not None and r.rendered.chars != r.recorded_chars for r in foreign)
    text = (
        f"; {len(foreign)} calls are a foreign agent's (taken in from its spans): the knobs named are zymi's "
        "(the agent had none), and the base line is its history replayed with nothing masked"
    )
    if rewritten:
        return text + f": {rewritten} of its calls sent less than that (it rewrote its history itself)"
    return text + ", which is exactly what it sent"


# -- output ---------------------------------------------------------------------------------------
def to_json(advice: Advice) -> dict[str, Any]:
    def finding(f: Finding) -> dict[str, Any]:
        d: dict[str, Any] = {
            "signal": f.signal,
            "summary": f.summary,
            "evidence": f.evidence,
            "figures": f.figures,
            "call": None if f.stream_id is None else {"stream_id": f.stream_id, "sequence": f.sequence},
        }
        rec = f.recommendation
        if rec is not None:
            d["recommendation"] = {
                "text": rec.text,
                "knobs": rec.knobs,
                "step": rec.step,
                "mode": rec.mode,
                "effect": None
                if rec.effect is None
                else {**asdict(rec.effect), "hard_cap_risk": round(rec.effect.hard_cap_risk, 4)},
                "not_replayed": rec.not_replayed,
            }
        return d

    return {
        "caveat": advice.caveat,
        "knobs": advice.knobs,
        "model": advice.model,
        "price_entry": advice.price_entry,
        "cache_family": advice.cache_family,
        "calls": advice.calls,
        "signals": sorted({f.signal for f in advice.findings}),
        "findings": [finding(f) for f in advice.findings],
    }


def _money(x: float | None) -> str:
    return "no price" if x is None else f"{x:.4f}"


def effect_line(e: Effect) -> str:
    return (
        f"input tokens {e.tokens_sum_before:,} → {e.tokens_sum:,}; cost with cache {_money(e.cost_with_cache_before)}"
        f" → {_money(e.cost_with_cache)}; compactions {e.compactions_before} → {e.compactions}; hard-cap failures "
        f"{e.hard_cap_failures_before} → {e.hard_cap_failures}; peak {e.chars_peak_before:,} → {e.chars_peak:,} "
        f"bytes ({e.hard_cap_risk:.0%} of the hard cap); cache breaks {e.cache_breaks_before} → {e.cache_breaks} "
        f"({e.provenance})"
    )


def to_markdown(advice: Advice, title: str = "zymi-tui advise") -> str:
    lines = [f"# {title}", "", f"> **{advice.caveat}**", ""]
    k = advice.knobs
    lines.append(
        f"Recorded knobs: window {k['observation_window']}, soft {k['soft_cap_chars']:,}, hard "
        f"{k['hard_cap_chars']:,}, min_tail {k['min_tail_turns']}, forget "
        f"{'off' if k['forget_after_turns'] is None else k['forget_after_turns']}. {advice.calls} agent calls. "
        f"Model: {advice.model or 'unknown'} ({advice.price_entry or 'no price'}; cache model: "
        f"{advice.cache_family or 'none'})."
    )
    lines.append("")
    if not advice.findings:
        lines.append("No findings.")
    for f in advice.findings:
        lines += [f"## `{f.signal}`", "", f.summary, ""]
        if f.stream_id is not None:
            lines.append(f"Shown at: `{f.stream_id}` seq {f.sequence}")
            lines.append("")
        lines += [f"- {e}" for e in f.evidence]
        rec = f.recommendation
        if rec is not None:
            lines += ["", f"**Recommendation:** {rec.text}"]
            if rec.knobs is not None:
                values = ", ".join(f"{a}={'off' if b is None else b}" for a, b in rec.knobs.items())
                lines += ["", f"- knobs `{profile_name(rec.knobs)}`: {values}"]
            if rec.effect is not None:
                lines.append(f"- replayed on this store (estimated): {effect_line(rec.effect)}")
            if rec.not_replayed:
                lines.append(f"- not replayed: {rec.not_replayed}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
