"""The reusable prompt prefix between two calls of a step stream, and what broke it.

A provider's prompt cache can serve only the leading messages a call shares with an earlier one.
`prefix_reuse(prev, cur)` counts the leading messages of `cur` identical to those of `prev` (the
`[memory]` block compared as a set of lines: zymi writes its keys in no stable order), their
bytes, and names the first message that differs and the knob or event that changed it.

Both calls are given as `Shape`s (kept by `ContextBuilder.build`), so the common case — the same
Layer C list, grown by appends, with more messages masked or forgotten — is answered from the
builder's running sums without materialising either message list.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import lru_cache

from zymi_tui.context.layer_c import Item, Tail
from zymi_tui.context.masking import memory_block
from zymi_tui.context.rendered import Prefix, Shape
from zymi_tui.context.splice import layer_c_bytes


@dataclass(frozen=True)
class PrefixBreak:
    """The first message of the current call that differs from the previous call's."""

    index: int  # position in the current call's message list
    layer: str  # "A" | "B" | "C"
    source_seq: int | None  # the step-stream event the message comes from (Layer C)
    cause: str  # e.g. "masked by observation_window=10", "compaction of seq 3..40"


@dataclass(frozen=True)
class PrefixReuse:
    messages: int  # leading messages identical to the previous call's
    chars: int  # their bytes (zymi's measure)
    broken: PrefixBreak | None  # None: the previous call's whole list is reused


def _a_keys(shape: Shape) -> tuple[tuple[Hashable, int], ...]:
    return _prefix_keys(shape.prefix)


@lru_cache(maxsize=256)
def _prefix_keys(p: Prefix) -> tuple[tuple[Hashable, int], ...]:
    """Layer A's messages as keys and bytes (the same for every call of a step run: remembered)."""
    if p.inferred_bytes is not None:
        return tuple(
            (("inferred", p.inferred_bytes, i), p.inferred_bytes if i == 0 else 0) for i in range(p.inferred_count)
        )
    keys: list[tuple[Hashable, int]] = [(("system", p.system_prompt), len(p.system_prompt.encode()))]
    if p.task:
        keys.append((("task", p.task), len(p.task.encode())))
    return tuple(keys)


def _b_key(shape: Shape) -> tuple[Hashable, int] | None:
    if not shape.memory:
        return None
    block = memory_block(shape.memory)
    return ("memory", block.lines), block.bytes


def maskable(tail: Tail, i: int) -> bool:
    """Whether Layer C item `i` looks different once its turn is masked."""
    r = tail.items[i]
    return r.masked_for != -1 and (r.has_masked_text() or r.masked_bytes != r.bytes) and tail.in_turn(i)


def _masked(tail: Tail, i: int, mask_end: int) -> bool:
    """Whether Layer C item `i` is shown in a form other than its full one."""
    return i < mask_end and maskable(tail, i)


def _c_key(r: Item, masked: bool) -> Hashable:
    return (r.seq, r.kind, masked, r.message.content if r.note is not None else None)


def _c_bytes(shape: Shape, j: int) -> int:
    """Bytes of Layer C items [cut, j) as shown in `shape`."""
    t, cut, m = shape.tail, shape.cut, shape.mask_end
    mid = max(cut, min(j, m))
    return layer_c_bytes(t.cum_masked[cut], t.cum_masked[mid], t.cum_full[mid], t.cum_full[j])


def _head(shape: Shape) -> tuple[tuple[Hashable, int], ...]:
    keys = _a_keys(shape)
    b = _b_key(shape)
    return (*keys, b) if b is not None else keys


def head_figures(shape: Shape) -> tuple[int, int]:
    """The messages and bytes of `shape`'s Layer A and B: what `prefix_reuse` counts as reused of them
    when the previous call had the same Layer A and memory (`same_head`)."""
    head = _head(shape)
    return len(head), sum(nbytes for _, nbytes in head)


UNNAMED = "not named: figures only"  # the cause of a break `prefix_reuse(named=False)` finds


def prefix_reuse(
    prev: Shape, cur: Shape, same_head: tuple[int, int] | None = None, *, named: bool = True
) -> PrefixReuse:
    """How much of `prev`'s message list `cur` begins with (see the module's docstring). `same_head`:
    `head_figures(cur)`, given only when `prev`'s Layer A and memory are `cur`'s (its calls' renderings
    under several knob sets share them: replay/lockstep.py). `named=False`: a break found in Layer C
    has the cause UNNAMED, not worked out (for a caller that reads only whether there is one)."""
    if same_head is not None:
        head, reused_chars = same_head
    else:
        prev_head, cur_head = _head(prev), _head(cur)
        a_count = len(_a_keys(cur))
        reused_chars = 0
        for i, (pk, ck) in enumerate(zip(prev_head, cur_head, strict=False)):
            if pk[0] != ck[0]:
                return PrefixReuse(i, reused_chars, _head_break(cur, i, a_count))
            reused_chars += ck[1]
        if len(prev_head) != len(cur_head):
            i = min(len(prev_head), len(cur_head))
            if i == len(prev_head) and prev.n == prev.cut:  # the previous list, all of it, begins this one
                return PrefixReuse(i, reused_chars, None)
            layer = "B" if i >= a_count else "A"
            cause = "memory block added" if len(cur_head) > len(prev_head) else "memory block removed"
            if layer == "A":
                cause = "Layer A changed"
            return PrefixReuse(i, reused_chars, PrefixBreak(i, layer, None, cause))
        head = len(cur_head)
    prev_len, cur_len = prev.n - prev.cut, cur.n - cur.cut
    j = _first_c_difference(prev, cur)
    reused = head + j
    chars = reused_chars + _c_bytes(cur, cur.cut + j)
    if j >= prev_len:
        return PrefixReuse(reused, chars, None)
    if j >= cur_len:  # the current list is a strict prefix of the previous one
        cause = (_fresh(prev, cur) or "messages removed") if named else UNNAMED
        return PrefixReuse(reused, chars, PrefixBreak(reused, "C", None, cause))
    cause = _cause(prev, cur, j) if named else UNNAMED
    return PrefixReuse(reused, chars, PrefixBreak(reused, "C", cur.tail.items[cur.cut + j].seq, cause))


def breaks_same_head(prev: Shape, cur: Shape) -> bool:
    """Whether `cur` does not begin with `prev`'s whole list (`prefix_reuse(prev, cur, same_head)`'s break),
    their Layer A and memory the same: the break alone, its figures not counted (a caller that prices no
    cache reads nothing else)."""
    if _grown(prev, cur):  # (answered without `_first_c_difference`'s index: a break, or a shorter list)
        return _newly_masked(prev, cur) is not None or cur.n < prev.n
    return _first_c_difference(prev, cur) < prev.n - prev.cut


def _head_break(cur: Shape, i: int, a_count: int) -> PrefixBreak:
    if i >= a_count:
        return PrefixBreak(i, "B", None, "memory block changed")
    what = "system prompt changed" if i == 0 else "task (Layer A user message) changed"
    return PrefixBreak(i, "A", None, what)


def _grown(prev: Shape, cur: Shape) -> bool:
    """Whether `cur` is `prev`'s list grown by appends (the same tail and cut, masked as far or further)."""
    return prev.tail is cur.tail and prev.cut == cur.cut and prev.mask_end <= cur.mask_end


def _newly_masked(prev: Shape, cur: Shape) -> int | None:
    """In a grown list (`_grown`), the first item that differs: only a newly masked one can, shown in full before
    (at or past the previous masked end) and masked now (before this one's) if maskable; None if none is."""
    t = cur.tail
    for i in range(max(prev.mask_end, cur.cut), min(cur.mask_end, prev.n)):
        if maskable(t, i):
            return i
    return None


def _first_c_difference(prev: Shape, cur: Shape) -> int:
    """Index (from cut) of the first Layer C message that differs; len of the shorter if none."""
    prev_len, cur_len = prev.n - prev.cut, cur.n - cur.cut
    limit = min(prev_len, cur_len)
    if _grown(prev, cur):
        i = _newly_masked(prev, cur)
        return limit if i is None else i - cur.cut
    pt, ct = prev.tail, cur.tail
    for j in range(limit):
        pi, ci = prev.cut + j, cur.cut + j
        pr, cr = pt.items[pi], ct.items[ci]
        if _c_key(pr, _masked(pt, pi, prev.mask_end)) != _c_key(cr, _masked(ct, ci, cur.mask_end)):
            return j
    return limit


def _fresh(prev: Shape, cur: Shape) -> str | None:
    if cur.tail.hidden_by_fresh > prev.tail.hidden_by_fresh:
        return "earlier runs dropped by context.mode: fresh"
    return None


def _cause(prev: Shape, cur: Shape, j: int) -> str:
    pr = prev.tail.items[prev.cut + j]
    cr = cur.tail.items[cur.cut + j]
    for lo, hi in cur.compactions:
        if (lo <= pr.seq <= hi or cr.seq == lo) and (lo, hi) not in prev.compactions:
            return f"compaction of seq {lo}..{hi}"
    if pr.seq == cr.seq and pr.kind == cr.kind:
        if _masked(cur.tail, cur.cut + j, cur.mask_end):
            return f"masked by observation_window={cur.knobs.observation_window}"
        return "changed"
    if cur.cut > prev.cut or (cur.tail is not prev.tail and pr.seq < cr.seq):
        if cur.knobs.forget_after_turns is not None and cur.cut > 0:
            return f"forgotten by forget_after_turns={cur.knobs.forget_after_turns}"
        return _fresh(prev, cur) or "earlier messages dropped (a rebuild without the fresh filter)"
    return _fresh(prev, cur) or "changed"
