"""The signals read off one replay of the store under the current knobs: what each detector sees, and the
knob it searches (the search and the verdict are `search`'s). The context-policy signals live here; tool
and cache signals in `signals_tools` and `signals_cache`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from zymi_tui.context.knobs import PROFILES, ContextKnobs
from zymi_tui.events.kinds import ContextCompacted, ToolCallRequested
from zymi_tui.events.store import STEP_MARK, EventReader
from zymi_tui.replay.advice.model import Finding, KnobDict, ProjectFacts, Recommendation
from zymi_tui.replay.advice.search import Grid, distinct
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.compare import Comparison, ProfileRun, knob_dict
from zymi_tui.replay.costs import PriceTable

NEAR_MISS = 0.10  # a call within 10% of the hard cap
MIN_CALLS_FOR_GROWTH = 6
CHAT_TURNS = 4  # a stream with this many user turns is a chat
ToolBytes = Callable[[str], int | None]  # a tool's definition as sent (JSON bytes), None: unknown


@dataclass
class StoreFacts:
    negative: list[tuple[str, int, int]] = field(default_factory=list)  # (stream, seq, bytes_saved)
    tools_called: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # step stream -> tools


async def store_facts(reader: EventReader) -> StoreFacts:
    facts = StoreFacts()
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


def sent_rows(rows: Sequence[CallContext]) -> list[CallContext]:
    """The agent calls sent under the current knobs (the replay's `agent_calls`)."""
    return [
        r
        for r in rows
        if not r.is_compaction
        and not r.hard_cap_failure
        and r.rendered is not None
        and not r.rendered.hard_cap_exceeded
    ]


def step_of_stream(stream: str) -> str:
    return stream.split(STEP_MARK, 1)[1] if STEP_MARK in stream else stream


def user_turns(calls: Sequence[CallContext]) -> int:
    """Runs of a step stream that began with a new task (a chat's user turns)."""
    return len({c.correlation_id for c in calls if c.correlation_id is not None})


def chars_of(r: CallContext) -> int:
    return r.rendered.chars if r.rendered is not None else r.recorded_chars


class Signals:
    """What every detector reads: the replayed rows under the current knobs, their figures (`cmp`, the
    same replay), the project and store facts, and the grid of candidates near the current knobs."""

    def __init__(
        self,
        rows: list[CallContext],
        cmp: Comparison,
        base: ContextKnobs,
        facts: ProjectFacts,
        store: StoreFacts,
        tool_bytes: ToolBytes | None,
        prices: PriceTable | None,
    ) -> None:
        self.rows, self.cmp, self.base, self.facts, self.store = rows, cmp, base, facts, store
        self.tool_bytes, self.prices = tool_bytes, prices
        self.sent = sent_rows(rows)
        streams: dict[str, list[CallContext]] = defaultdict(list)
        for r in self.sent:
            streams[r.stream_id].append(r)
        self.streams = dict(streams)
        self.kd = knob_dict(base)
        self.compacted_streams = {r.stream_id for r in rows if r.is_compaction}
        turns = [len(s.tail.turn_starts) for r in self.sent if r.rendered is not None and (s := r.rendered.shape)]
        self.grid = Grid(self.kd, max(turns, default=0))

    @property
    def baseline(self) -> ProfileRun:
        return self.cmp.profiles[0]

    def candidates(self, *groups: list[KnobDict]) -> list[KnobDict]:
        return distinct(self.kd, *groups)

    def chat_streams(self) -> list[tuple[str, int]]:
        return [(s, n) for s, calls in self.streams.items() if (n := user_turns(calls)) >= CHAT_TURNS]


def values_text(knob: str, cands: Sequence[KnobDict]) -> str:
    vals = ", ".join("off" if k[knob] is None else str(k[knob]) for k in cands)
    return f"{knob} {vals}"


def hard_cap_exceeded(s: Signals) -> list[Finding]:
    failed = [r for r in s.rows if r.hard_cap_failure and r.recorded_chars]
    if not failed:
        return []
    first, g = failed[0], s.grid
    hard = s.base.hard_cap_chars
    cands = s.candidates(
        g.windows(-1),
        g.tails(),
        g.soft_caps(-1),
        [g.knobs(observation_window=1, min_tail_turns=1)],
        [g.knobs(hard_cap_chars=max(hard, round(max(r.recorded_chars for r in failed) * 1.1)))],
    )
    return [
        Finding(
            "hard_cap_exceeded",
            f"{len(failed)} context build(s) exceeded the hard cap ({hard:,} bytes): the step failed there",
            [f"{r.stream_id} seq {r.sequence}: {r.recorded_chars:,} bytes > {hard:,}" for r in failed[:5]],
            {"calls": [[r.stream_id, r.sequence, r.recorded_chars] for r in failed], "hard_cap_chars": hard},
            first.stream_id,
            first.sequence,
            Recommendation(
                "mask, keep fewer tail turns or compact earlier so the tail fits under the hard cap",
                candidates=cands,
                searched="observation_window, min_tail_turns and soft_cap_chars lower, hard_cap_chars 10% over the "
                "largest build",
            ),
        )
    ]


def hard_cap_near_miss(s: Signals) -> list[Finding]:
    hard = s.base.hard_cap_chars
    near = [r for r in s.sent if hard and chars_of(r) >= (1 - NEAR_MISS) * hard]
    if not near:
        return []
    top = max(near, key=chars_of)
    g = s.grid
    cands = s.candidates(g.soft_caps(-1), g.windows(-1), [g.knobs(observation_window=1, min_tail_turns=1)])
    return [
        Finding(
            "hard_cap_near_miss",
            f"{len(near)} call(s) came within {NEAR_MISS:.0%} of the hard cap ({hard:,} bytes); "
            f"peak {chars_of(top):,} ({chars_of(top) / hard:.0%})",
            [
                f"{r.stream_id} seq {r.sequence}: {chars_of(r):,} bytes ({chars_of(r) / hard:.0%} of the hard cap)"
                for r in near[:5]
            ],
            {"calls": [[r.stream_id, r.sequence, chars_of(r)] for r in near], "hard_cap_chars": hard},
            top.stream_id,
            top.sequence,
            Recommendation(
                "compact earlier or mask sooner, to keep a margin under the hard cap",
                candidates=cands,
                searched="soft_cap_chars and observation_window lower",
            ),
        )
    ]


def knobs_not_biting(s: Signals) -> list[Finding]:
    out = []
    for stream, calls in s.streams.items():
        if len(calls) < MIN_CALLS_FOR_GROWTH:
            continue
        shapes = [c.rendered.shape for c in calls if c.rendered is not None and c.rendered.shape is not None]
        masked = any(sh.mask_end > sh.cut for sh in shapes)
        forgotten = any(c.rendered is not None and c.rendered.forgotten for c in calls)
        compacted = (
            any(c.rendered is not None and c.rendered.compacted_away for c in calls) or stream in s.compacted_streams
        )
        if masked or forgotten or compacted:
            continue
        ys = [chars_of(c) for c in calls]
        r2, slope = linear_fit(ys)
        if slope <= 0 or r2 < 0.8 or ys[-1] < 2 * max(ys[0], 1):
            continue
        turns = len(shapes[-1].tail.turn_starts) if shapes else 0
        cands = s.candidates(s.grid.windows(-1))
        out.append(
            Finding(
                "knobs_not_biting",
                f"{stream}: the context grows linearly ({ys[0]:,} → {ys[-1]:,} bytes over {len(calls)} calls, "
                f"~{slope:,.0f} bytes/call, R² {r2:.2f}) with no masking, forgetting or compaction in effect",
                [
                    f"{len(calls)} agent calls, {turns} turns, observation_window={s.base.observation_window}, "
                    f"soft cap {s.base.soft_cap_chars:,}"
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
                    "lower observation_window so older tool results are masked",
                    candidates=cands,
                    searched=values_text("observation_window", cands),
                ),
            )
        )
    return out


def negative_bytes_saved(s: Signals) -> list[Finding]:
    neg = s.store.negative
    if not neg:
        return []
    cands = s.candidates(s.grid.soft_caps(-1))
    return [
        Finding(
            "negative_bytes_saved",
            f"{len(neg)} compaction(s) returned a summary larger than what it replaced",
            [f"{st} seq {q}: bytes_saved {b:,}" for st, q, b in neg[:5]],
            {"compactions": [[st, q, b] for st, q, b in neg]},
            neg[0][0],
            neg[0][1],
            Recommendation(
                "lower soft_cap_chars (zymi's context guide)",
                candidates=cands,
                searched=values_text("soft_cap_chars", cands),
            ),
        )
    ]


def chat_under_coding_defaults(s: Signals) -> list[Finding]:
    chats = s.chat_streams()
    coding = PROFILES["coding"]
    if not chats or s.base.forget_after_turns is not None or s.base.soft_cap_chars < coding.soft_cap_chars:
        return []
    stream, turns = max(chats, key=lambda x: x[1])
    cands = s.candidates([knob_dict(PROFILES["chat"])], s.grid.forgets(-1))
    return [
        Finding(
            "chat_under_coding_defaults",
            f"{stream}: a chat of {turns} user turns runs with no forget_after_turns and coding-size caps "
            f"(soft {s.base.soft_cap_chars:,})",
            [f"{st}: {n} user turns" for st, n in chats[:5]],
            {"streams": [[st, n] for st, n in chats], "knobs": s.kd},
            stream,
            s.streams[stream][-1].sequence,
            Recommendation(
                "use the chat profile or forget earlier turns",
                candidates=cands,
                searched="the chat profile; " + values_text("forget_after_turns", s.grid.forgets(-1)),
            ),
        )
    ]


def runtime_context_unset(s: Signals) -> list[Finding]:
    if s.facts.has_runtime_context:
        return []
    name = "chat" if s.chat_streams() else "coding"
    profile = knob_dict(PROFILES[name])
    rec = (
        Recommendation(
            f"write runtime.context with the {name} profile's knobs",
            candidates=[profile],
            searched=f"the {name} profile",
        )
        if profile != s.kd
        else None
    )
    same = "" if rec else f" (the {name} profile's knobs: writing them down changes no figure)"
    return [
        Finding(
            "runtime_context_unset",
            "project.yml has no runtime.context block: every run uses the engine defaults "
            f"({ContextKnobs().describe()}){same}",
            ["runtime.context absent from project.yml"],
            {"suggested_profile": name},
            recommendation=rec,
        )
    ]


def linear_fit(ys: Sequence[int]) -> tuple[float, float]:
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
