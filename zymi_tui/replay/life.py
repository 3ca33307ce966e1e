"""The life of every Layer C message of a step stream: at each agent call, in full, masked,
forgotten, compacted away, dropped by `context.mode: fresh`, or not yet there — and why.

Built from the `Shape` each replayed call keeps, so a cell costs a dictionary lookup and the
rent (bytes x calls carried) of every message is exact without visiting every (message, call)
pair: within one Layer C list (`Tail`) a message's calls in full, then masked, then forgotten
are contiguous runs found by bisection over the calls' (n, cut, mask_end), which only grow.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from zymi_tui.context.layer_c import Item, Tail
from zymi_tui.context.masking import memory_block
from zymi_tui.context.rendered import Shape
from zymi_tui.context.reuse import maskable
from zymi_tui.events.messages import AssistantMessage, ToolResultMessage, message_text
from zymi_tui.replay.call_context import CallContext

FULL, MASKED, FORGOTTEN, COMPACTED, FRESH, NOT_YET = range(6)
STATE_NAMES = ("in full", "masked", "forgotten", "compacted away", "dropped by context.mode: fresh", "not yet there")


def _key(raw: Item) -> Hashable:
    return (raw.seq, raw.kind, raw.note)


@dataclass
class LifeRow:
    """One Layer C message of the stream (a summary is a message of its own)."""

    key: Hashable
    seq: int
    role: str
    tool: str | None
    text: str
    bytes: int
    masked_bytes: int
    rent: int = 0  # bytes x calls sent in full (`zymi-tui rent`'s measure)
    carried: int = 0  # bytes carried over all calls (full bytes in full, masked bytes masked)
    calls_full: int = 0
    calls_masked: int = 0
    first_call: int = 1 << 62  # the first call whose list holds it (sent, masked or forgotten)

    @property
    def label(self) -> str:
        what = self.tool or self.role
        return f"{self.seq:>5} {what}"


@dataclass
class MessageLife:
    stream_id: str
    calls: list[CallContext] = field(repr=False)  # the stream's agent calls, in order
    rows: list[LifeRow] = field(default_factory=list, repr=False)  # (a repr of thousands of calls takes seconds)
    _index: dict[int, dict[Hashable, int]] = field(default_factory=dict, repr=False)  # id(tail) -> key -> index
    _row_of: dict[Hashable, int] = field(default_factory=dict, repr=False)
    _ranges: dict[int, list[tuple[int, int]]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, stream_id: str, rows: Sequence[CallContext]) -> MessageLife:
        calls = [
            r for r in rows
            if r.stream_id == stream_id and not r.is_compaction and not r.hard_cap_failure and r.rendered is not None
            and not r.rendered.hard_cap_exceeded and r.rendered.shape
        ]  # fmt: skip
        life = cls(stream_id, calls)
        life._collect()
        life._rent()
        return life

    def shape(self, call: int) -> Shape:
        shape = self.calls[call].rendered.shape  # type: ignore[union-attr]
        assert shape is not None
        return shape

    def _tails(self) -> dict[int, Tail]:
        return {id(self.shape(c).tail): self.shape(c).tail for c in range(len(self.calls))}

    def _collect(self) -> None:
        names: dict[str, str] = {}
        found: dict[Hashable, LifeRow] = {}
        for tid, tail in self._tails().items():
            index: dict[Hashable, int] = {}
            for i, raw in enumerate(tail.items):
                key = _key(raw)
                index[key] = i
                m = raw.message
                if key not in found:
                    if isinstance(m, AssistantMessage):
                        names.update((c.id, c.name) for c in m.tool_calls)
                    tool = names.get(m.tool_call_id) if isinstance(m, ToolResultMessage) else None
                    role = "summary" if raw.note is not None and m.role == "system" else m.role
                    found[key] = LifeRow(key, raw.seq, role, tool, message_text(m), raw.bytes, raw.masked_bytes)
            self._index[tid] = index
        self.rows = sorted(found.values(), key=lambda r: (r.seq, str(r.key)))
        self._row_of = {r.key: i for i, r in enumerate(self.rows)}

    def _rent(self) -> None:
        groups: dict[int, list[int]] = {}
        for c in range(len(self.calls)):
            groups.setdefault(id(self.shape(c).tail), []).append(c)
        for tid, members in groups.items():
            shapes = [self.shape(c) for c in members]
            tail = shapes[0].tail
            ns, cuts, masks = [s.n for s in shapes], [s.cut for s in shapes], [s.mask_end for s in shapes]
            monotone = all(a <= b for xs in (ns, cuts, masks) for a, b in itertools.pairwise(xs))
            for key, i in self._index[tid].items():
                row = self.rows[self._row_of[key]]
                can_mask = maskable(tail, i)
                if monotone:
                    a, b, m = bisect.bisect_right(ns, i), bisect.bisect_right(cuts, i), bisect.bisect_right(masks, i)
                    full = max(0, min(b, m if can_mask else b) - a)
                    masked = max(0, b - max(a, m)) if can_mask else 0
                    first = members[a] if a < len(members) else None
                else:
                    present = [s for s in shapes if s.cut <= i < s.n]
                    masked = sum(1 for s in present if can_mask and i < s.mask_end)
                    full = len(present) - masked
                    first = next((c for c, s in zip(members, shapes, strict=True) if i < s.n), None)
                row.calls_full += full
                row.calls_masked += masked
                row.rent += full * row.bytes
                row.carried += full * row.bytes + masked * row.masked_bytes
                if first is not None:
                    row.first_call = min(row.first_call, first)

    # -- cells ------------------------------------------------------------------------------------
    def state(self, row: int, call: int) -> int:
        r = self.rows[row]
        s = self.shape(call)
        i = self._index[id(s.tail)].get(r.key)
        if i is not None and i < s.n:
            if i < s.cut:
                return FORGOTTEN
            return MASKED if i < s.mask_end and maskable(s.tail, i) else FULL
        if r.seq > self.calls[call].sequence or call < r.first_call:
            return NOT_YET
        if r.role == "summary" or self._compacted(call, r.seq):
            return COMPACTED
        if s.tail.hidden_by_fresh:
            return FRESH
        return NOT_YET

    def _compacted(self, call: int, seq: int) -> bool:
        """Whether `seq` lies in a range the call's compactions replaced (merged ranges, bisection)."""
        merged = self._ranges.get(call)
        if merged is None:
            merged = []
            for lo, hi in sorted(self.shape(call).compactions):
                if merged and lo <= merged[-1][1] + 1:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
                else:
                    merged.append((lo, hi))
            self._ranges[call] = merged
        i = bisect.bisect_right(merged, (seq, 1 << 62)) - 1
        return i >= 0 and merged[i][0] <= seq <= merged[i][1]

    def why(self, row: int, call: int) -> str:
        state = self.state(row, call)
        s = self.shape(call)
        r = self.rows[row]
        if state == MASKED:
            return (
                f"masked by observation_window={s.knobs.observation_window} ({r.masked_bytes:,} of {r.bytes:,} bytes)"
            )
        if state == FORGOTTEN:
            return f"forgotten by forget_after_turns={s.knobs.forget_after_turns}"
        if state == COMPACTED:
            ranges = [f"{lo}..{hi}" for lo, hi in s.compactions if lo <= r.seq <= hi]
            return "compacted away" + (
                f" (compaction of seq {ranges[-1]})" if ranges else " (a later summary replaced it)"
            )
        if state == FULL:
            return f"in full ({r.bytes:,} bytes)"
        return STATE_NAMES[state]

    def text_at(self, row: int, call: int) -> str:
        """The message as the call sent it ("" when it was not sent)."""
        state = self.state(row, call)
        if state == FULL:
            return self.rows[row].text
        if state == MASKED:
            s = self.shape(call)
            i = self._index[id(s.tail)][self.rows[row].key]
            return message_text(s.tail.items[i].masked_message())
        return ""

    def columns(self, width: int) -> list[int]:
        """Call indexes for `width` columns: every call, or evenly spaced ones ending at the last."""
        n = len(self.calls)
        if n <= width or width <= 1:
            return list(range(n))
        return sorted({round(k * (n - 1) / (width - 1)) for k in range(width)})

    def by_rent(self) -> list[int]:
        return sorted(range(len(self.rows)), key=lambda i: (-self.rows[i].rent, self.rows[i].seq))

    def find(self, text: str) -> list[int]:
        needle = text.casefold()
        return [i for i, r in enumerate(self.rows) if needle in r.text.casefold()]

    def row_at(self, key: Hashable) -> int | None:
        return self._row_of.get(key)

    def call_at(self, sequence: int) -> int | None:
        return next((i for i, c in enumerate(self.calls) if c.sequence == sequence), None)


# -- one call against the previous one ---------------------------------------------------------------
@dataclass(frozen=True)
class DiffLine:
    change: str  # "added" | "masked" | "forgot" | "compacted" | "changed"
    what: str
    bytes: int  # what the change did to the context's size (+ grew, - shrank)


def _shown(shape: Shape) -> dict[Hashable, tuple[int, bool, Item]]:
    """Layer C of a call: key -> (bytes as sent, masked, item)."""
    t = shape.tail
    out = {}
    for i in range(shape.cut, shape.n):
        raw = t.items[i]
        masked = i < shape.mask_end and maskable(t, i)
        out[_key(raw)] = (raw.masked_bytes if masked else raw.bytes, masked, raw)
    return out


def _what(raw: Item) -> str:
    kind = "summary" if raw.note is not None and raw.message.role == "system" else raw.message.role
    return f"seq {raw.seq} {kind}"


def call_diff(prev: Shape, cur: Shape) -> list[DiffLine]:
    """What `cur` added, masked, forgot, compacted or changed against `prev` (the stream's previous call)."""
    out: list[DiffLine] = []
    pa, ca = prev.prefix, cur.prefix
    if (pa.system_prompt, pa.inferred_bytes) != (ca.system_prompt, ca.inferred_bytes):
        out.append(DiffLine("changed", "system prompt (layer A)", len(ca.system_prompt.encode()) - len(
            pa.system_prompt.encode())))  # fmt: skip
    if pa.task != ca.task:
        out.append(DiffLine("changed", "task (layer A)", len(ca.task.encode()) - len(pa.task.encode())))
    pm, cm = dict(prev.memory), dict(cur.memory)
    if pm != cm:
        size = memory_block(cur.memory).bytes if cm else 0
        size -= memory_block(prev.memory).bytes if pm else 0
        keys = {k for k in pm.keys() | cm.keys() if pm.get(k) != cm.get(k)}
        out.append(DiffLine("changed", f"memory block (layer B): {', '.join(sorted(keys))}", size))
    before, after = _shown(prev), _shown(cur)
    cur_index = {_key(r): i for i, r in enumerate(cur.tail.items)}
    for key, (nbytes, masked, raw) in after.items():
        if key not in before:
            out.append(DiffLine("added", _what(raw), nbytes))
        elif masked and not before[key][1]:
            out.append(DiffLine("masked", _what(raw), nbytes - before[key][0]))
    for key, (nbytes, _, raw) in before.items():
        if key in after:
            continue
        i = cur_index.get(key)
        if i is not None and i < cur.cut:
            out.append(DiffLine("forgot", _what(raw), -nbytes))
        elif raw.note is not None or any(lo <= raw.seq <= hi for lo, hi in cur.compactions):
            out.append(DiffLine("compacted", _what(raw), -nbytes))
        else:
            out.append(DiffLine("dropped", _what(raw) + " (context.mode: fresh)", -nbytes))
    return out
