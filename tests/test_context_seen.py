"""`SeenEvents` answers as the two plain lists it replaced: the timestamp of the first event seen at a
sequence or later (`bisect_left` over the sequences, as the builder read its arrays before), and the
events themselves in order, through every way out of its step form (a sequence not after the last or
256 on, a clock going back or 2**32 ns on) and across copies and extensions; and `SeenBesideItems`, the events
that made an item only counted, gives every event back in its place from the items' own figures."""

from __future__ import annotations

import bisect
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from zymi_tui.context.seen import CHUNK, SeenBesideItems, SeenEvents

_T0 = 1_760_000_000_000_000_000  # (a 2025 clock in ns: past what 4 bytes hold)


def _expected_ts_at(seqs: list[int], stamps: list[int], seq: int) -> int | None:
    i = bisect.bisect_left(seqs, seq)
    return stamps[i] if i < len(stamps) else None


steps = st.one_of(
    st.tuples(st.integers(1, 3), st.integers(0, 2_000_000_000)),  # a stream's usual steps
    st.tuples(st.sampled_from([0, -1, 255, 256, 10**6]), st.integers(0, 10)),  # sequences that do not fit
    st.tuples(st.just(1), st.sampled_from([-1, 2**32 - 1, 2**32, -(10**12)])),  # clocks that do not fit
)


def _events(moves: list[tuple[int, int]], first: int = 1) -> list[tuple[int, int]]:
    seq, ts, out = first, _T0, []
    for step, tick in moves:
        seq, ts = seq + step, ts + tick
        out.append((seq, ts))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 5_000_000_000)), max_size=3 * CHUNK), st.data())
def test_a_streams_events_answer_as_the_plain_lists(moves: list[tuple[int, int]], data: st.DataObject) -> None:
    events = _events(moves)
    _check(events, data)


@settings(max_examples=300, deadline=None)
@given(st.lists(steps, max_size=3 * CHUNK), st.data())
def test_events_that_do_not_fit_answer_as_the_plain_lists(moves: list[tuple[int, int]], data: st.DataObject) -> None:
    _check(_events(moves), data)


def _check(events: list[tuple[int, int]], data: st.DataObject) -> None:
    seen = SeenEvents()
    for seq, ts in events:
        seen.add(seq, ts)
    seqs, stamps = [s for s, _ in events], [t for _, t in events]
    assert len(seen) == len(events)
    assert list(seen.between(0, len(events))) == events
    probes = {*seqs, *(s - 1 for s in seqs), *(s + 1 for s in seqs), -5, 0, 10**9}
    for seq in sorted(probes):
        assert seen.ts_at(seq) == _expected_ts_at(seqs, stamps, seq), seq
    lo = data.draw(st.integers(0, len(events)))
    hi = data.draw(st.integers(lo, len(events)))
    assert list(seen.between(lo, hi)) == events[lo:hi]
    # a copy brought on by another's events [lo, hi), as a what-if builder follows its base
    head = data.draw(st.integers(0, len(events)))
    other = SeenEvents()
    for seq, ts in events[:head]:
        other.add(seq, ts)
    copied = other.copy()
    copied.extend(seen, lo, hi)
    want = events[:head] + events[lo:hi]
    assert list(copied.between(0, len(copied))) == want
    assert list(other.between(0, len(other))) == events[:head]  # (the copy shares nothing)
    w_seqs, w_stamps = [s for s, _ in want], [t for _, t in want]
    for seq in sorted({*w_seqs, *(s + 1 for s in w_seqs), 0}):
        assert copied.ts_at(seq) == _expected_ts_at(w_seqs, w_stamps, seq), seq


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(steps, st.booleans()), max_size=3 * CHUNK), st.integers(0, 300))
def test_events_beside_the_items_are_every_event_in_its_place(moves: list[tuple[tuple[int, int], bool]],
                                                              items_first: int) -> None:  # fmt: skip
    """Events that made an item counted (as a replay's builder notes them: its items keep their own
    sequence and timestamp), the others kept: made whole, every event in the order seen; `items_first`
    items before the first other event (past 255 in a row: `other` refuses, the caller makes them whole)."""
    flags = [True] * items_first + [made for _, made in moves]
    events = _events([(1, 1000)] * items_first + [move for move, _ in moves])
    beside = SeenBesideItems()
    whole: SeenEvents | None = None
    seqs, stamps = array("q"), array("q")
    for (seq, ts), made in zip(events, flags, strict=True):
        if whole is not None:
            whole.add(seq, ts)
        elif made:
            beside.since += 1
        elif not beside.other(seq, ts):
            whole = beside.events(seqs, stamps)
            whole.add(seq, ts)
        if made:
            seqs.append(seq)
            stamps.append(ts)
    if whole is None:
        whole = beside.events(seqs, stamps)
    assert list(whole.between(0, len(whole))) == events
