"""`prefix_reuse` between successive builds of one stream against a reference made from the messages
themselves: the leading messages of the current call's wire list equal to the previous call's, their
bytes (each entry's), and a break exactly when the previous list is not all reused.

Its answers come from running sums and two shortcuts: the same tail grown by appends (only the newly
masked items compared), and the same Layer A and memory given (`same_head`, as replay/lockstep.py gives
it for the renderings of one build under several knob sets). Both shortcuts are exercised here on random
streams (compactions included, which start a new tail), and `named=False` must find the same figures, and
`breaks_same_head` (the break alone, with its own shortcut for the grown list) the same break."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.test_context_properties import MEMORY, PREFIX, SETTINGS, knobs, make_stream, ops
from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.rendered import RenderedContext
from zymi_tui.context.reuse import UNNAMED, breaks_same_head, head_figures, prefix_reuse
from zymi_tui.context.splice import rerender
from zymi_tui.events.replay_view import replay_event
from zymi_tui.replay.lockstep import same_head


def _reference(prev: RenderedContext, cur: RenderedContext) -> tuple[int, int, bool]:
    """Leading messages of `cur` equal (on the wire) to `prev`'s, their bytes, and whether `prev`'s list
    is not all reused."""
    a, b = prev.wire(), cur.wire()
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n, sum(e.bytes for e in cur.entries[:n]), n < len(a)


def _unique(plan: list[Any]) -> list[Any]:
    """`plan` with every text made unique (the reference compares messages by their text; `prefix_reuse`
    by their place in the stream, which two equal texts at one position do not tell apart)."""
    out: list[Any] = []
    for i, op in enumerate(plan):
        if op[0] == "turn":
            _, content, tools, drop = op
            tools = [(name, f"{i}.{j}{arg}", f"{i}.{j}{result}") for j, (name, arg, result) in enumerate(tools)]
            out.append(("turn", f"{i}{content or ''}", tools, drop))
        elif op[0] in ("user", "orphan"):
            out.append((op[0], f"{i}{op[1]}"))
        else:
            out.append((*op[:3], f"{i}{op[3]}"))
    return out


def _builds(plan: list[Any], k: ContextKnobs) -> list[RenderedContext]:
    events, calls = make_stream(_unique(plan))
    builder = ContextBuilder(k, PREFIX)
    out, fed = [], 0
    for upto in calls:
        while fed < upto:
            builder.add(replay_event(events[fed]))
            fed += 1
        out.append(builder.build(MEMORY, allow_compaction=False))
    return out


def _check(prev: RenderedContext, cur: RenderedContext) -> None:
    assert prev.shape is not None and cur.shape is not None
    want = _reference(prev, cur)
    named = prefix_reuse(prev.shape, cur.shape)
    assert (named.messages, named.chars, named.broken is not None) == want
    same = prefix_reuse(prev.shape, cur.shape, head_figures(cur.shape), named=False)
    assert (same.messages, same.chars, same.broken is not None) == want
    if same_head(prev.shape, cur.shape):  # (as lockstep asks it, no cache model reading the figures)
        assert breaks_same_head(prev.shape, cur.shape) == want[2]
    if same.broken is not None and same.broken.layer == "C":
        assert same.broken.cause == UNNAMED
        assert named.broken is not None and (named.broken.index, named.broken.source_seq) == (
            same.broken.index,
            same.broken.source_seq,
        )


@SETTINGS
@given(ops, knobs, st.integers(0, 3), st.sampled_from([None, 1, 2]))
def test_prefix_reuse_equals_the_messages_compared(
    plan: list[Any], k: ContextKnobs, window: int, forget: int | None
) -> None:
    builds = _builds(plan, k)
    other = ContextKnobs(
        observation_window=window,
        forget_after_turns=forget,
        soft_cap_chars=k.soft_cap_chars,
        hard_cap_chars=k.hard_cap_chars,
        min_tail_turns=k.min_tail_turns,
    )
    for prev, cur in pairwise(builds):
        _check(prev, cur)  # the builder's own knobs
        again_prev, again_cur = rerender(prev, other), rerender(cur, other)  # another knob set, as lockstep does
        assert again_prev is not None and again_cur is not None
        _check(again_prev, again_cur)


def test_newly_masked_items_break_the_reuse_where_they_start() -> None:
    """A turn masked by the call after it: the shortcut for a list grown by appends must find the break
    at the first newly masked message, not reuse the whole previous list."""
    plan = [("turn", "look", [("read_file", "a", "x" * 300)], False)] * 3
    builds = _builds(plan, ContextKnobs(observation_window=1))
    prev, cur = builds[1], builds[2]
    assert prev.shape is not None and cur.shape is not None and prev.shape.tail is cur.shape.tail
    assert cur.shape.mask_end > prev.shape.mask_end  # the second turn is masked only in the third call
    n, _, broken = _reference(prev, cur)
    assert broken and n < len(prev.entries)
    _check(prev, cur)
