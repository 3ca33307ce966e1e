"""zymi's per-stream hash chain (events/store/event_store.rs, ADR-0035/0040).

v2: `"v2:" + hex(sha256(b"v2" + event_id + u64le(sequence) + data + prev_hash))`;
v1 (bare hex): `sha256(event_id + data + prev_hash)`; empty: a legacy row, exempt.
Verification walks a stream by sequence, checks each `prev_hash` link and each hash, and that
the sequences run 1, 2, 3… with no gap or repeat (zymi does not check this: a chain rewritten over
removed rows passes its check), then compares the last row with `stream_heads` (which catches a deleted tail or stream).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import msgspec

from zymi_tui.events.chain_heads import V2_PREFIX as V2_PREFIX
from zymi_tui.events.chain_heads import Heads


def column_text(value: object) -> str:
    """A TEXT column as read, or a BLOB (a tampered row) as the text its bytes hold (bytes that are
    not UTF-8 kept as lone surrogates, which `_bytes` turns back into the same bytes)."""
    return str(value, "utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _bytes(text: str) -> bytes:
    """The bytes a column holds: text a reader kept with `surrogateescape` goes back to its own bytes."""
    return text.encode("utf-8", "surrogateescape")


def hash_v2(event_id: str, sequence: int, data: str, prev_hash: str) -> str:
    h = hashlib.sha256(b"v2")
    h.update(_bytes(event_id))
    h.update(sequence.to_bytes(8, "little"))
    h.update(_bytes(data))
    h.update(_bytes(prev_hash))
    return V2_PREFIX + h.hexdigest()


def hash_v1(event_id: str, data: str, prev_hash: str) -> str:
    return hashlib.sha256(_bytes(event_id + data + prev_hash)).hexdigest()


def recompute(event_id: str, sequence: int, data: str, prev_hash: str, stored: str) -> str | None:
    """The hash this row should carry, by the scheme its stored hash uses; None for legacy rows."""
    if not stored:
        return None
    if stored.startswith(V2_PREFIX):
        return hash_v2(event_id, sequence, data, prev_hash)
    return hash_v1(event_id, data, prev_hash)


class ChainRow(msgspec.Struct, frozen=True):
    global_id: int
    event_id: str
    sequence: int
    data: str
    prev_hash: str
    hash: str


class StreamVerdict(msgspec.Struct):
    """The result of verifying one stream; `problem` is None when the chain holds."""

    stream_id: str
    rows: int = 0
    verified: int = 0
    legacy: int = 0
    problem: str | None = None
    bad_sequence: int | None = None
    bad_global_id: int | None = None
    last: tuple[int, str] = (0, "")  # sequence and hash of the last hashed row
    hash_at_head: str | None = None  # hash of the row at the head's sequence, when seen

    @property
    def ok(self) -> bool:
        return self.problem is None


class ChainWalker:
    """One stream's chain, checked a row at a time in sequence order (so a whole store can be walked
    in one pass, each stream's state kept); `verdict` is final once a problem is found."""

    __slots__ = ("expected_prev", "head_sequence", "last_sequence", "verdict")

    def __init__(self, stream_id: str, head: tuple[int, str] | None) -> None:
        self.verdict = StreamVerdict(stream_id)
        self.head_sequence = -1 if head is None else head[0]
        self.expected_prev = ""
        self.last_sequence = 0  # of the last row fed, legacy rows included

    def feed(self, row: ChainRow) -> bool:
        """Check the next row; False once the chain is broken (later rows are not looked at)."""
        verdict = self.verdict
        if verdict.problem is not None:
            return False
        verdict.rows += 1
        if type(row.sequence) is not int:  # a tampered row: SQLite keeps whatever type it is given
            verdict.problem = f"row {row.global_id}: the sequence column is not an integer ({str(row.sequence)[:40]!r})"
            verdict.bad_global_id = row.global_id
            return False
        previous, self.last_sequence = self.last_sequence, row.sequence
        computed = recompute(row.event_id, row.sequence, row.data, row.prev_hash, row.hash)
        if computed is None:
            verdict.legacy += 1
            return True
        if row.prev_hash != self.expected_prev:
            verdict.problem = (
                f"prev_hash mismatch at sequence {row.sequence} (event {row.event_id}): "
                f"expected '{self.expected_prev}', found '{row.prev_hash}'"
            )
        elif computed != row.hash:
            verdict.problem = (
                f"hash mismatch at sequence {row.sequence} (event {row.event_id}): "
                f"the row's data or id was changed after it was written"
            )
        elif row.sequence == previous:
            verdict.problem = f"two rows hold sequence {row.sequence} (the second: event {row.event_id})"
        elif row.sequence != previous + 1:
            verdict.problem = (
                f"sequence gap: sequence {row.sequence} follows {previous} (event {row.event_id}), "
                "though every link holds: rows were removed and the chain rewritten"
            )
        if verdict.problem:
            verdict.bad_sequence, verdict.bad_global_id = row.sequence, row.global_id
            return False
        self.expected_prev = row.hash
        verdict.last = (row.sequence, row.hash)
        if row.sequence == self.head_sequence:
            verdict.hash_at_head = row.hash
        verdict.verified += 1
        return True


# (id, event_id, stream_id, sequence, data, prev_hash, hash): `event_id` and `data` as the UTF-8 bytes the
# hash covers where the reader can fetch them so, the others (and those otherwise) as the columns hold
# them: text, or in a tampered row a BLOB, a number or NULL
ScanRow = tuple[Any, Any, Any, Any, Any, Any, Any]


def scan_rows(stream_id: str, rows: Iterable[ChainRow]) -> list[ScanRow]:
    """A stream's rows as `ChainScan` takes them (its event ids and data as the bytes the hash covers)."""
    return [(r.global_id, _bytes(r.event_id), stream_id, r.sequence, _bytes(r.data), r.prev_hash, r.hash) for r in rows]


_START = (0, "")  # a stream's state before its first row: the sequence and hash its first row links to
_NEVER = object()  # equal to no column: a stream left to its `ChainWalker` never matches the inline check
_WALKED = (0, _NEVER)
_AT_HEAD = (-1, _NEVER)  # a stream checked inline up to its head: its (sequence, hash) are the head's


class ChainScan:
    """Every stream's chain in one pass over the rows in global order.

    A row whose v2 hash links and recomputes from the bytes as fetched is checked inline, and of its stream
    only (last sequence, last hash) is kept: one tuple, its hash the row's own string (no per-row object,
    no per-stream walker: this is all of a million-row check but the fetch and the hashing); once its head is
    reached, not even that (`_AT_HEAD`: the packed heads hold it). Any other row hands its stream to a
    `ChainWalker`, which words what is wrong. A stream whose sequences do not rise with the ids, or whose rows
    go past the head read before the scan (written meanwhile), is named in `out_of_order` (complete once
    `settle` is called): its verdict must come from a walk in sequence order (`verify._walk_all` walks it
    again alone). Verdicts are made one at a time, when asked for (`verdict`): a million-event store's 50,000
    streams never hold a verdict each at once."""

    def __init__(self, heads: Mapping[str, tuple[int, str]], *, continues: bool = False) -> None:
        self.heads = Heads.of(heads)
        # `continues`: the rows start part way through the table (a later part of a split scan, `chain_split`):
        # a stream whose first row here links to an earlier one is taken up from that row's link, kept in
        # `openings` ((sequence, hash) it links to) for the seam to be checked against the earlier part
        self.continues = continues
        self.openings: dict[str, tuple[int, str]] = {}
        # a stream's state: its (last sequence, last hash) while every row of it checked inline; `_AT_HEAD` once
        # that reached its head; `_WALKED` once handed to its walker; None: no row met yet. Of a stream the heads
        # know, at its place in `states` (a list: no second dict of 50,000 keys, 2.6 MB, and no second copy of a
        # stream's id); of any other, in `lasts`. A stream id that is not text (a tampered row's BLOB) is never
        # kept (its walker holds it as text)
        self.states: list[tuple[int, object] | None] = [None] * len(self.heads)
        self.lasts: dict[object, tuple[int, object]] = {}
        self.walkers: dict[str, ChainWalker] = {}
        self.out_of_order: set[str] = set()
        # what the store's engine finds wrong below the rows (SQLite's quick_check, an index that
        # disagrees with its table), each a line for a person; set by the backend that scans
        self.damage: list[str] = []
        # the rows read and the sum of their ids (the index check compares them with each index's entries)
        self.rows_read = 0
        self.id_sum = 0
        self.read_whole = False  # every row meant was read (not stopped, no damaged page)

    def feed(self, rows: Iterable[ScanRow]) -> None:
        lasts, states, heads, sha256, prefix = self.lasts, self.states, self.heads, hashlib.sha256, V2_PREFIX
        places, seqs = heads.places, heads.seqs
        for gid, event_id, stream_id, seq, data, prev, digest in rows:
            place = places.get(stream_id)
            last = lasts.get(stream_id) if place is None else states[place]
            if last is None:  # a new stream (an id that is not text: to its walker)
                last = _START if type(stream_id) is str else _WALKED
                if self.continues and last is _START and seq != 1:
                    last = self._open(stream_id, seq, prev)
            elif last is _AT_HEAD:  # a row past the head
                last = heads.at(place)  # type: ignore[arg-type]
            # `prev` equal to the last verified hash (or "" before the first) is ASCII text: it encodes
            if seq == last[0] + 1 and prev == last[1] and type(seq) is int:
                try:
                    computed = sha256(b"v2" + event_id + seq.to_bytes(8, "little") + data + prev.encode()).hexdigest()
                except (TypeError, OverflowError):  # a column that is not bytes, a sequence past 64 bits
                    computed = ""
                if digest == prefix + computed:  # what `ChainWalker.feed` does with a row that holds
                    if place is None:
                        lasts[stream_id] = (seq, digest)
                    elif seqs[place] == seq and heads.is_head(place, seq, digest):
                        states[place] = _AT_HEAD
                    else:
                        states[place] = (seq, digest)
                    continue
            self._walk(gid, event_id, stream_id, seq, data, prev, digest)

    def _open(self, stream_id: str, seq: Any, prev: Any) -> tuple[int, object]:
        """A stream first met part way through it (a later part of a split scan): taken up from the link its
        first row here holds, when that row links to a hashed row (the seam check compares it with the
        earlier part's last row); otherwise (a legacy row, a column that is not what zymi writes) it is left
        to a walk of the stream alone, in sequence order (`out_of_order`)."""
        if type(seq) is int and seq > 1 and type(prev) is str and prev:
            self.openings[stream_id] = opening = (seq - 1, prev)
            self._put(stream_id, opening)
            return opening
        self.out_of_order.add(stream_id)
        return _START

    def _state(self, stream: str) -> tuple[int, object] | None:
        place = self.heads.places.get(stream)
        return self.lasts.get(stream) if place is None else self.states[place]

    def _put(self, stream: str, state: tuple[int, object]) -> None:
        place = self.heads.places.get(stream)
        if place is None:
            self.lasts[stream] = state
        else:
            self.states[place] = state

    def _last(self, stream: str) -> tuple[int, object] | None:
        """A stream's (last sequence, last hash) as checked inline (None: no row met; `_WALKED`: walked)."""
        last = self._state(stream)
        return self.heads[stream] if last is _AT_HEAD else last

    def _walk(self, gid: Any, event_id: Any, stream_id: Any, seq: Any, data: Any, prev: Any, digest: Any) -> None:
        """A row the inline check did not pass, through its stream's walker (made, at the state the inline
        check left the stream in, on the stream's first such row)."""
        text = column_text(stream_id)
        walker = self.walkers.get(text)
        if walker is None:
            walker = self.walkers[text] = ChainWalker(text, self.heads.get(text))
            last = self._last(text) or _START
            if last[0]:  # the rows checked inline so far: 1..n (from the opening on, in a later part), each verified
                n, digest_n = last
                assert isinstance(digest_n, str)
                walker.last_sequence, walker.expected_prev = n, digest_n
                walker.verdict.rows = walker.verdict.verified = n - self.openings.get(text, _START)[0]
                walker.verdict.last = (n, digest_n)
                if n == walker.head_sequence:
                    walker.verdict.hash_at_head = digest_n
                elif n > walker.head_sequence >= 0:  # the hash at the head, passed, was not kept: walk it again
                    self.out_of_order.add(text)
            self._put(text, _WALKED)
        if type(seq) is int and seq <= walker.last_sequence:
            self.out_of_order.add(text)
        walker.feed(
            ChainRow(gid, column_text(event_id), seq, column_text(data), column_text(prev), column_text(digest))
        )

    def settle(self) -> set[str]:
        """`out_of_order` made complete (with each stream checked inline past the head read before the scan),
        once the rows are all fed; returned."""
        heads, states = self.heads, self.states
        for stream, place in heads.places.items():
            last = states[place]
            # (an odd head, whose sequence is not an integer, has the lowest in `seqs`: its stream is walked again)
            if last is not None and last is not _AT_HEAD and last is not _WALKED and last[0] > heads.seqs[place]:
                self.out_of_order.add(stream)
        return self.out_of_order

    def streams(self) -> Iterator[str]:
        """Every stream met, or known to the heads (the keys of `verdict`; those of the heads among them may have
        none)."""
        yield from self.heads.places
        yield from self.lasts  # type: ignore[misc]

    def verdict(self, stream: str) -> StreamVerdict | None:
        """A stream's verdict (before the heads' check): its walker's, or that of its rows all checked inline;
        None when no row of it was met."""
        walker = self.walkers.get(stream)
        if walker is not None:
            return walker.verdict
        last = self._last(stream)
        if last is None or last is _WALKED:  # (no row met; a walked stream has its walker)
            return None
        n, digest = last
        assert isinstance(digest, str)
        head = self.heads.get(stream)
        at_head = digest if head is not None and head[0] == n else None
        checked = n - self.openings.get(stream, _START)[0]
        return StreamVerdict(stream, rows=checked, verified=checked, last=(n, digest), hash_at_head=at_head)

    def verdicts(self) -> dict[str, StreamVerdict]:
        """Every stream's verdict at once (`settle`d first); `verify` takes them one at a time instead."""
        self.settle()
        out = {}
        for stream in self.streams():
            v = self.verdict(stream)
            if v is not None:
                out[stream] = v
        return out


def walk_chain(stream_id: str, rows: Iterable[ChainRow], head: tuple[int, str] | None) -> StreamVerdict:
    """Check every `prev_hash` link and hash; remember what `check_head` needs."""
    walker = ChainWalker(stream_id, head)
    for row in rows:
        if not walker.feed(row):
            break
    return walker.verdict


def check_head(verdict: StreamVerdict, head: tuple[int, str] | None, head_after: tuple[int, str] | None) -> None:
    """zymi's truncation check (ADR-0040): the last row must be the recorded head.

    A stream another process appends to while we read also passes when the row at the head we
    read first carries its hash and the head has moved on, so a live store never reads as
    truncated; rows past a head that did not move were appended without updating stream_heads.
    """
    if head is None or verdict.problem:
        return
    head_seq, head_hash = head
    if type(head_seq) is not int:  # (a tampered row: zymi's reader fails on it, "Invalid column type")
        verdict.problem = f"stream_heads records a sequence that is not an integer: {str(head_seq)[:40]!r}"
        return
    after = head if head_after is None else head_after
    last_seq = verdict.last[0]
    if verdict.verified == 0:
        verdict.problem = f"stream truncated: stream_heads records sequence {head_seq} but no hashed events remain"
        verdict.bad_sequence = 1
    elif verdict.last == after:
        pass  # zymi's check
    elif verdict.hash_at_head == head_hash and after != head and after[0] >= last_seq:
        pass  # written to while we read: the first head is in the chain and has moved on
    elif last_seq > head_seq:
        verdict.problem = (
            f"{last_seq - head_seq} row(s) after sequence {head_seq}, the stream head: "
            "appended without updating stream_heads"
        )
        verdict.bad_sequence = head_seq + 1
    elif last_seq == head_seq:
        verdict.problem = f"the last row (sequence {last_seq}) does not carry the hash stream_heads records"
        verdict.bad_sequence = last_seq
    else:
        verdict.problem = (
            f"stream truncated: the last row is sequence {last_seq} but stream_heads records "
            f"sequence {head_seq} (missing {head_seq - last_seq} event(s))"
        )
        verdict.bad_sequence = last_seq + 1
