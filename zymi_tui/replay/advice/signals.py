"""The signals read off one replay of the store under the current knobs: what each detector sees, and the
knob it searches (the search and the verdict are `search`'s); what they see of pass one's calls is
`watch`'s, kept as the calls came. The context-policy signals live here; tool
and cache signals in `signals_tools` and `signals_cache`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from zymi_tui.context.knobs import PROFILES, ContextKnobs
from zymi_tui.events.kinds import ContextCompacted
from zymi_tui.events.store import EventReader
from zymi_tui.replay.advice.model import Finding, KnobDict, ProjectFacts, Recommendation
from zymi_tui.replay.advice.search import Grid, distinct
from zymi_tui.replay.advice.watch import NEAR_MISS, Watch
from zymi_tui.replay.compare import Comparison, knob_dict
from zymi_tui.replay.costs import PriceTable
from zymi_tui.replay.figures import ProfileRun

T = TypeVar("T")

ToolBytes = Callable[[str], int | None]  # a tool's definition as sent (JSON bytes), None: unknown


@dataclass
class StoreFacts:
    negative: list[tuple[str, int, int]] = field(default_factory=list)  # (stream, seq, bytes_saved)


async def store_facts(reader: EventReader) -> StoreFacts:
    facts = StoreFacts()
    cursor = 0
    while True:
        page = await reader.read_kind_page(ContextCompacted.TAG, stream_id=None, after_global_id=cursor, limit=5000)
        if not page:
            break
        cursor = page[-1].global_id
        for se in page:
            kind, ev = se.event.kind, se.event
            if isinstance(kind, ContextCompacted) and kind.bytes_saved < 0:
                facts.negative.append((ev.stream_id, ev.sequence, kind.bytes_saved))
    return facts


def in_order(items: list[tuple[int, T]]) -> list[T]:
    """A watch's per-stream figures in the order of the streams' first sent call."""
    return [x for _, x in sorted(items, key=lambda o: o[0])]


class Signals:
    """What every detector reads: pass one's calls under the current knobs as the watch kept them, their
    figures (`cmp`, the same replay), the project and store facts, and the grid of candidates near the
    current knobs."""

    def __init__(
        self,
        watch: Watch,
        cmp: Comparison,
        base: ContextKnobs,
        facts: ProjectFacts,
        store: StoreFacts,
        tool_bytes: ToolBytes | None,
        prices: PriceTable | None,
        breakpoints: tuple[int, int] | None = None,
    ) -> None:
        self.watch, self.cmp, self.base, self.facts, self.store = watch, cmp, base, facts, store
        self.tool_bytes, self.prices = tool_bytes, prices
        self.breakpoints = breakpoints  # the baseline's cache reads and writes with a breakpoint per request
        self.kd = knob_dict(base)
        self.grid = Grid(self.kd, watch.max_turns)
        self.chats = sorted(watch.chats)

    @property
    def baseline(self) -> ProfileRun:
        return self.cmp.profiles[0]

    def candidates(self, *groups: list[KnobDict]) -> list[KnobDict]:
        return distinct(self.kd, *groups)

    def chat_streams(self) -> list[tuple[str, int]]:
        return [(s, n) for _, s, n, _ in self.chats]


def values_text(knob: str, cands: Sequence[KnobDict]) -> str:
    vals = ", ".join("off" if k[knob] is None else str(k[knob]) for k in cands)
    return f"{knob} {vals}"


def hard_cap_exceeded(s: Signals) -> list[Finding]:
    failed = s.watch.failed
    if not failed:
        return []
    first, g = failed[0], s.grid
    hard = s.base.hard_cap_chars
    cands = s.candidates(
        g.windows(-1),
        g.tails(),
        g.soft_caps(-1),
        [g.knobs(observation_window=1, min_tail_turns=1)],
        [g.knobs(hard_cap_chars=max(hard, round(max(b for _, _, b in failed) * 1.1)))],
    )
    return [
        Finding(
            "hard_cap_exceeded",
            f"{len(failed)} context build(s) exceeded the hard cap ({hard:,} bytes): the step failed there",
            [f"{st} seq {q}: {b:,} bytes > {hard:,}" for st, q, b in failed[:5]],
            {"calls": [[st, q, b] for st, q, b in failed], "hard_cap_chars": hard},
            first[0],
            first[1],
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
    near = s.watch.near
    if not near:
        return []
    top = max(near, key=lambda c: c[2])
    g = s.grid
    cands = s.candidates(g.soft_caps(-1), g.windows(-1), [g.knobs(observation_window=1, min_tail_turns=1)])
    return [
        Finding(
            "hard_cap_near_miss",
            f"{len(near)} call(s) came within {NEAR_MISS:.0%} of the hard cap ({hard:,} bytes); "
            f"peak {top[2]:,} ({top[2] / hard:.0%})",
            [f"{st} seq {q}: {b:,} bytes ({b / hard:.0%} of the hard cap)" for st, q, b in near[:5]],
            {"calls": [[st, q, b] for st, q, b in near], "hard_cap_chars": hard},
            top[0],
            top[1],
            Recommendation(
                "compact earlier or mask sooner, to keep a margin under the hard cap",
                candidates=cands,
                searched="soft_cap_chars and observation_window lower",
            ),
        )
    ]


def knobs_not_biting(s: Signals) -> list[Finding]:
    out = []
    for g in in_order(s.watch.growth):
        cands = s.candidates(s.grid.windows(-1))
        out.append(
            Finding(
                "knobs_not_biting",
                f"{g.stream}: the context grows linearly ({g.first:,} → {g.last:,} bytes over {g.calls} calls, "
                f"~{g.slope:,.0f} bytes/call, R² {g.r2:.2f}) with no masking, forgetting or compaction in effect",
                [
                    f"{g.calls} agent calls, {g.turns} turns, observation_window={s.base.observation_window}, "
                    f"soft cap {s.base.soft_cap_chars:,}"
                ],
                {
                    "stream_id": g.stream,
                    "first_chars": g.first,
                    "last_chars": g.last,
                    "slope": round(g.slope, 1),
                    "r2": round(g.r2, 3),
                    "turns": g.turns,
                },
                g.stream,
                g.last_sequence,
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
    _, stream, turns, last_sequence = max(s.chats, key=lambda x: x[2])
    cands = s.candidates([knob_dict(PROFILES["chat"])], s.grid.forgets(-1))
    return [
        Finding(
            "chat_under_coding_defaults",
            f"{stream}: a chat of {turns} user turns runs with no forget_after_turns and coding-size caps "
            f"(soft {s.base.soft_cap_chars:,})",
            [f"{st}: {n} user turns" for st, n in chats[:5]],
            {"streams": [[st, n] for st, n in chats], "knobs": s.kd},
            stream,
            last_sequence,
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
