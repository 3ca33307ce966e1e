"""Layer C computed again from a builder's items (builder.py), when a compaction or a new fresh cutoff changes
which of them show: the compacted ranges suppressed and each summary put at its range's start, the items
older than the cutoff hidden. A builder fed event by event appends to its tail instead.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from zymi_tui.context.cold_items import RawItems
from zymi_tui.context.layer_c import OTHER, Item, NotedItem, Tail
from zymi_tui.context.rendered import COMPACTED_HEADER
from zymi_tui.events.messages import SystemMessage


@dataclass(slots=True)
class Compaction:
    """A compaction a builder applies: its range suppressed, its summary shown at the range's start."""

    lo: int
    hi: int
    summary: str
    simulated: bool = False
    estimated_bytes: int | None = None


def compacted_tail(
    compactions: Sequence[Compaction],
    raw: RawItems,
    raw_seqs: array[int],
    raw_ts: array[int],
    visible_at: Callable[[int, int | None], bool],
    cutoff: int | None,
    monotone: bool,
) -> Tail:
    """Layer C of the items `raw` (with their sequences and timestamps) under `compactions` and `cutoff`;
    `visible_at(seq, cutoff)`: whether event `seq` is at or after the cutoff; `monotone`: whether the items'
    timestamps never go back (the first shown item is then found by bisection)."""
    ranges = sorted((c.lo, c.hi) for c in compactions if c.lo <= c.hi)
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))

    def in_range(seq: int) -> bool:
        i = bisect.bisect_right(merged, (seq, 1 << 62)) - 1
        return i >= 0 and merged[i][0] <= seq <= merged[i][1]

    # one pointer over the summaries sorted by range start (docs/context.md#compaction)
    summaries: list[Item] = []
    last = -1
    for c in sorted(compactions, key=lambda c: c.lo):
        if c.lo > last and visible_at(c.lo, cutoff) and in_range(c.lo):
            text = COMPACTED_HEADER + c.summary
            nbytes = len(text.encode())
            if c.estimated_bytes is not None:
                nbytes = len(COMPACTED_HEADER.encode()) + c.estimated_bytes
            note = f"{'simulated summary' if c.simulated else 'summary'} replacing compaction of seq {c.lo}..{c.hi}"
            summary = SystemMessage(content=text)
            summaries.append(NotedItem(c.lo, summary, nbytes, OTHER, note, simulated=c.simulated))
            last = c.lo
        else:
            break

    start = 0
    if cutoff is not None and monotone:
        lo_i, hi_i = 0, len(raw)
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            if raw_ts[mid] < cutoff:
                lo_i = mid + 1
            else:
                hi_i = mid
        start = lo_i
    visible: list[Item] = []
    pos = start
    hidden = start
    if cutoff is not None and not monotone:
        hidden = sum(1 for ts in raw_ts if ts < cutoff)
    for lo, hi in [*merged, (1 << 62, 1 << 62)]:
        end = bisect.bisect_left(raw_seqs, lo, pos)
        visible.extend(raw[i] for i in range(pos, end) if cutoff is None or raw_ts[i] >= cutoff)
        pos = max(pos, bisect.bisect_right(raw_seqs, hi, pos))
        if pos >= len(raw):
            break
    for s in summaries:
        keys = [r.seq for r in visible]
        visible.insert(bisect.bisect_left(keys, s.seq), s)
    tail = Tail()
    tail.hidden_by_fresh = hidden
    for r in visible:
        tail.append(r)
    return tail
