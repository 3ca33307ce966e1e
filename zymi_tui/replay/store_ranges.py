"""A store cut into ranges of global ids that replay independently: no stream has events on both sides
of a cut, so a replay of one range needs nothing of another (a step's builder, its run's inputs,
memory and outputs, a row awaiting its completion all live within their streams' spans), except the
recorded summaries' compression ratio, which a range's replay learns first from the compactions
before it (`learned_before`). What-ifs replay each range on a process pool (`sweep_pool`)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import aclosing
from itertools import pairwise

from zymi_tui.events.kinds import ContextCompacted
from zymi_tui.events.store import STEP_MARK, EventReader, StreamInfo
from zymi_tui.replay.event_pages import replay_events
from zymi_tui.replay.simulated import SummaryEstimate

Range = tuple[int, int]  # (after, until]: the global ids after `after` up to `until`, both included


Span = tuple[int, int]  # a stream's (first global id, last global id)


def store_ranges(streams: Sequence[StreamInfo], parts: int) -> list[Range]:
    """At most `parts` ranges of about as many global ids each, cut only where every stream lies wholly
    on one side; one range (0, last global id] when there is no such place (one long run)."""
    return span_ranges([(s.first_global_id, s.last_global_id) for s in streams if s.count], parts)


def clean_cuts(spans: list[Span]) -> list[int]:
    """Every global id c, ascending, after which a store of streams spanning `spans` (in any order: sorted
    here) may be cut: each stream ends at or before c, or starts after it."""
    spans.sort()
    cuts: list[int] = []
    reach = 0
    for first, last in spans:
        if reach and first > reach:
            cuts.append(first - 1)
        reach = max(reach, last)
    return cuts


def span_ranges(spans: list[Span], parts: int) -> list[Range]:
    """`store_ranges` of the streams' (first global id, last global id), in any order (sorted here)."""
    if not spans:
        return [(0, 0)]
    top = max(last for _, last in spans)
    cuts = clean_cuts(spans)
    if parts <= 1 or not cuts:
        return [(0, top)]
    chosen: list[int] = []
    for k in range(1, parts):
        target = top * k // parts
        best = min(cuts, key=lambda c: abs(c - target))
        if best not in chosen and (not chosen or best > chosen[-1]):
            chosen.append(best)
    bounds = [0, *chosen, top]
    return [(lo, hi) for lo, hi in pairwise(bounds) if hi > lo]


async def learned_before(reader: EventReader, after: int) -> SummaryEstimate:
    """The summary estimate a replay has learned once it has passed global id `after`: every recorded
    compaction up to there, in store order (what `Replayer` learns as it is fed them)."""
    estimate = SummaryEstimate()
    if after <= 0:
        return estimate
    async with aclosing(replay_events(reader, None, ("context_compacted",))) as events:
        async for se in events:
            if se.global_id > after:
                break
            if isinstance(se.kind, ContextCompacted) and STEP_MARK in se.stream_id:
                estimate.learn(se.kind.summary, se.kind.bytes_saved)
    return estimate
