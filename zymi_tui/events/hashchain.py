"""zymi's per-stream hash chain (events/store/event_store.rs, ADR-0035/0040).

v2: `"v2:" + hex(sha256(b"v2" + event_id + u64le(sequence) + data + prev_hash))`;
v1 (bare hex): `sha256(event_id + data + prev_hash)`; empty: a legacy row, exempt.
Verification walks a stream by sequence, checks each `prev_hash` link and each hash, and that
the sequences run 1, 2, 3… with no gap or repeat (zymi does not check this: a chain rewritten over
removed rows passes its check), then compares the last row with `stream_heads` (which catches a deleted tail or stream).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import msgspec

V2_PREFIX = "v2:"


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


class ChainScan:
    """Every stream's chain in one pass over the rows in global order, a `ChainWalker` per stream.

    A row whose v2 hash links and recomputes from the bytes as fetched is checked inline (no per-row
    object: this is all of a million-row check but the hashing); any other row goes through
    `ChainWalker.feed`, which words what is wrong. A stream whose sequences do not rise with the ids is
    named in `out_of_order` (its verdict must come from a walk in sequence order)."""

    def __init__(self, heads: dict[str, tuple[int, str]]) -> None:
        self.heads = heads
        self.walkers: dict[str, ChainWalker] = {}
        self.out_of_order: set[str] = set()
        # what the store's engine finds wrong below the rows (SQLite's quick_check, an index that
        # disagrees with its table), each a line for a person; set by the backend that scans
        self.damage: list[str] = []

    def _walker(self, stream_id: object) -> ChainWalker:
        text = column_text(stream_id)
        walker = self.walkers.get(text)
        if walker is None:
            walker = self.walkers[text] = ChainWalker(text, self.heads.get(text))
        return walker

    def feed(self, rows: Iterable[ScanRow]) -> None:
        walkers, sha256 = self.walkers, hashlib.sha256
        for gid, event_id, stream_id, seq, data, prev, digest in rows:
            walker = walkers.get(stream_id) or self._walker(stream_id)
            verdict = walker.verdict
            # `prev` equal to the last verified hash (or "" before the first) is ASCII text: it encodes
            if (
                type(seq) is int
                and seq == walker.last_sequence + 1
                and prev == walker.expected_prev
                and verdict.problem is None
            ):
                try:
                    computed = sha256(b"v2" + event_id + seq.to_bytes(8, "little") + data + prev.encode()).hexdigest()
                except (TypeError, OverflowError):  # a column that is not bytes, a sequence past 64 bits
                    computed = ""
                if digest == V2_PREFIX + computed:  # what `ChainWalker.feed` does with a row that holds
                    verdict.rows += 1
                    verdict.verified += 1
                    walker.last_sequence = seq
                    walker.expected_prev = digest
                    verdict.last = (seq, digest)
                    if seq == walker.head_sequence:
                        verdict.hash_at_head = digest
                    continue
            if type(seq) is int and seq <= walker.last_sequence:
                self.out_of_order.add(verdict.stream_id)
            text = column_text
            walker.feed(ChainRow(gid, text(event_id), seq, text(data), text(prev), text(digest)))


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
