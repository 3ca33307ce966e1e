"""Prompt caching: the prefix each call shares with the previous one, and a cost model.

The model (per provider family of the price table) predicts, for each call of a stream in order,
the input tokens a provider would serve from its cache: the prefix reused from the stream's
previous call (its bytes scaled by the call's tokens per byte), if that call was within the
family's TTL and the prefix reaches `min_tokens`, rounded down to `step_tokens` past the minimum.
Explicit families (Anthropic) cache nothing unless the request carries a breakpoint: zymi 0.9.3
sends none; `breakpoints=True` models one breakpoint at the end of every request (a read needs the
previous request whole as the prefix; the rest is written). Every modelled figure is an estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.costs import CacheFamily

NS = 1_000_000_000


def reuse_json(row: CallContext) -> dict[str, Any]:
    """`prefix_reuse_*` of an agent call (null for compaction calls and failed builds)."""
    r = row.reuse
    if r is None or row.is_compaction or row.hard_cap_failure:
        return {"prefix_reuse_messages": None, "prefix_reuse_chars": None, "prefix_break": None}
    brk = None
    if r.broken is not None:
        b = r.broken
        brk = {"index": b.index, "layer": b.layer, "source_seq": b.source_seq, "cause": b.cause}
    return {"prefix_reuse_messages": r.messages, "prefix_reuse_chars": r.chars, "prefix_break": brk}


class CacheCall(Protocol):
    """What the model reads of one sent call (a call's figures, `figures.CallFigure`)."""

    @property
    def stream_id(self) -> str: ...
    @property
    def ts_ns(self) -> int | None: ...
    @property
    def tokens(self) -> int:
        """The whole prompt."""
        ...

    @property
    def chars(self) -> int: ...
    @property
    def reuse_chars(self) -> int | None:
        """None: no comparable previous call (a compaction call)."""
        ...

    @property
    def whole_previous(self) -> bool:
        """The previous call's list is reused whole (no break)."""
        ...


@dataclass(frozen=True)
class CachePrediction:
    cached: int  # tokens read from the cache
    written: int  # tokens written to the cache (explicit families)
    expired: bool = False  # the previous call was longer ago than the TTL


def cacheable(tokens: int, family: CacheFamily) -> int:
    """The part of a `tokens`-long identical prefix the family serves from its cache."""
    if tokens < max(family.min_tokens, 1):
        return 0
    return family.min_tokens + (tokens - family.min_tokens) // family.step_tokens * family.step_tokens


class CacheModel:
    """The predictions of one family for calls given one at a time in store order (sent calls only):
    what `predict` gives for the whole list, keeping only each stream's last timestamp."""

    def __init__(self, family: CacheFamily, *, breakpoints: bool = False) -> None:
        self.family = family
        self.breakpoints = breakpoints
        self.last_ts: dict[str, int | None] = {}

    @property
    def reads_reuse(self) -> bool:
        """Whether a call's reused prefix is read (an explicit family without breakpoints caches nothing)."""
        return self.family.mode != "explicit" or self.breakpoints

    def next(self, c: CacheCall) -> CachePrediction:
        family = self.family
        explicit = family.mode == "explicit"
        prev_ts = self.last_ts.get(c.stream_id)
        seen = c.stream_id in self.last_ts
        self.last_ts[c.stream_id] = c.ts_ns
        if not self.reads_reuse:
            return CachePrediction(0, 0)
        expired = bool(
            seen and prev_ts is not None and c.ts_ns is not None and c.ts_ns - prev_ts > family.ttl_seconds * NS
        )
        prefix = 0
        if seen and not expired and c.reuse_chars and c.chars > 0:
            prefix = min(c.tokens, c.tokens * c.reuse_chars // c.chars)
        if explicit:
            read = cacheable(prefix, family) if c.whole_previous else 0
            read = prefix if read else 0  # a breakpoint caches exactly up to itself
            written = c.tokens - read if c.tokens >= family.min_tokens else 0
            return CachePrediction(read, written, expired)
        return CachePrediction(cacheable(prefix, family), 0, expired)


def predict(calls: Sequence[CacheCall], family: CacheFamily, *, breakpoints: bool = False) -> list[CachePrediction]:
    """One prediction per call, in the given (store) order."""
    model = CacheModel(family, breakpoints=breakpoints)
    return [model.next(c) for c in calls]
