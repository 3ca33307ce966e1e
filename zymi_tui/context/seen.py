"""The events a builder has seen, in order: each one's sequence and timestamp (ns), kept as small
differences from the one before, for the timestamp of any sequence (`SeenEvents.ts_at`).

A long run feeds a builder a million events: two 8-byte integers each was most of what its arrays held.
Each `CHUNK` events start from their full figures; within a chunk an event is one byte of sequence step
and four of clock step. An event that does not fit (its sequence not after the last, or more than 255
on; its clock back, or more than ~4.29 s on) turns the store into full figures from then on."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator

CHUNK = 256  # events a chunk's full figures start (what `ts_at` walks at most)
_SEQ_STEP, _TS_STEP = 1 << 8, 1 << 32  # (the steps an "B" and an "I" array hold)


class SeenEvents:
    """Sequences (increasing, as a stream's are) and timestamps of the events seen, in order."""

    __slots__ = ("_base_seq", "_base_ts", "_d_seq", "_d_ts", "_full_seq", "_full_ts", "_last_seq", "_last_ts", "_n")

    def __init__(self) -> None:
        self._n = 0
        self._base_seq, self._base_ts = array("q"), array("q")  # each chunk's first event
        self._d_seq, self._d_ts = array("B"), array("I")  # each event's steps from the one before (0: a chunk's first)
        self._last_seq = self._last_ts = 0
        # every event from the first that did not fit on (None: all fit)
        self._full_seq: array[int] | None = None
        self._full_ts: array[int] | None = None

    def __len__(self) -> int:
        return self._n

    def add(self, seq: int, ts: int) -> None:
        """The next event seen."""
        n = self._n
        self._n = n + 1
        if self._full_seq is None:
            if n % CHUNK == 0:
                self._base_seq.append(seq)
                self._base_ts.append(ts)
                self._d_seq.append(0)
                self._d_ts.append(0)
                self._last_seq, self._last_ts = seq, ts
                return
            step, tick = seq - self._last_seq, ts - self._last_ts
            if 0 < step < _SEQ_STEP and 0 <= tick < _TS_STEP:
                self._d_seq.append(step)
                self._d_ts.append(tick)
                self._last_seq, self._last_ts = seq, ts
                return
            self._to_full(n)
        self._full_seq.append(seq)  # type: ignore[union-attr]  # (made by `_to_full`)
        self._full_ts.append(ts)  # type: ignore[union-attr]

    def _to_full(self, n: int) -> None:
        """Every event's full figures from now on (`n` held so far)."""
        seqs, stamps = array("q"), array("q")
        for seq, ts in self.between(0, n):
            seqs.append(seq)
            stamps.append(ts)
        self._full_seq, self._full_ts = seqs, stamps
        self._base_seq, self._base_ts, self._d_seq, self._d_ts = array("q"), array("q"), array("B"), array("I")

    def between(self, lo: int, hi: int) -> Iterator[tuple[int, int]]:
        """(sequence, timestamp) of the events seen [lo, hi)."""
        if self._full_seq is not None:
            yield from zip(self._full_seq[lo:hi], self._full_ts[lo:hi], strict=True)  # type: ignore[index]
            return
        d_seq, d_ts = self._d_seq, self._d_ts
        for c in range(lo // CHUNK, (hi + CHUNK - 1) // CHUNK):
            first = c * CHUNK
            seq, ts = self._base_seq[c], self._base_ts[c]
            for i in range(first, min(first + CHUNK, hi)):
                if i > first:
                    seq += d_seq[i]
                    ts += d_ts[i]
                if i >= lo:
                    yield seq, ts

    def ts_at(self, seq: int) -> int | None:
        """The timestamp of the first event seen whose sequence is `seq` or later (None: none is)."""
        if self._full_seq is not None:
            i = bisect.bisect_left(self._full_seq, seq)
            return self._full_ts[i] if i < len(self._full_ts) else None  # type: ignore[arg-type,index]
        c = bisect.bisect_left(self._base_seq, seq)  # (chunks c on start at `seq` or later)
        if c > 0:
            for s, ts in self.between((c - 1) * CHUNK, min(c * CHUNK, self._n)):
                if s >= seq:
                    return ts
        return self._base_ts[c] if c < len(self._base_ts) else None

    def copy(self) -> SeenEvents:
        other = SeenEvents()
        other._n, other._last_seq, other._last_ts = self._n, self._last_seq, self._last_ts
        other._base_seq, other._base_ts = self._base_seq[:], self._base_ts[:]
        other._d_seq, other._d_ts = self._d_seq[:], self._d_ts[:]
        if self._full_seq is not None:
            other._full_seq, other._full_ts = self._full_seq[:], self._full_ts[:]  # type: ignore[index]
        return other

    def extend(self, other: SeenEvents, lo: int, hi: int) -> None:
        """`other`'s events [lo, hi) seen too, after these."""
        for seq, ts in other.between(lo, hi):
            self.add(seq, ts)


class SeenBesideItems:
    """`SeenEvents` of a builder that keeps each of its items' sequence and timestamp already (every
    item made by an event it saw, in order: a replay's builder): the events that made an item are a
    count between the others (`since`, then `gaps`), the others `SeenEvents` (`others`). A long chat
    stream's builder sees ~1.5 events an item: 2.2 B an item vs 7.4 B. `events(seqs, stamps)` gives
    every event seen, the items' own figures put back in their places."""

    __slots__ = ("gaps", "others", "since")

    def __init__(self) -> None:
        self.others = SeenEvents()
        self.gaps = array("B")  # before each of `others`, the items made since the one before
        self.since = 0  # items made since the last of `others`

    def other(self, seq: int, ts: int) -> bool:
        """An event that made no item, seen next; False (nothing noted): too many items came before it
        for `gaps` (make the events whole with `events`, then add it there)."""
        if self.since >= _SEQ_STEP:
            return False
        self.others.add(seq, ts)
        self.gaps.append(self.since)
        self.since = 0
        return True

    def events(self, seqs: array[int], stamps: array[int]) -> SeenEvents:
        """Every event seen, in order, where the items' sequences and timestamps are `seqs`, `stamps`."""
        assert sum(self.gaps) + self.since == len(seqs) == len(stamps)
        out = SeenEvents()
        k = 0
        for (seq, ts), gap in zip(self.others.between(0, len(self.others)), self.gaps, strict=True):
            for j in range(k, k + gap):
                out.add(seqs[j], stamps[j])
            k += gap
            out.add(seq, ts)
        for j in range(k, len(seqs)):
            out.add(seqs[j], stamps[j])
        return out
