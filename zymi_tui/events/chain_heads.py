"""A store's `stream_heads` table packed: each stream's name once (the key the scan looks its rows up by), its
head's sequence in an array and its `v2:` hash as the 32 bytes it spells.

A million-event store of many small runs has 50,000 heads. As a dict of `(sequence, hash)` tuples they held
~400 B a stream (the tuple, an int, a 116-byte hash string, beside the name); packed, ~40 B a stream beside the
name and its place. A head zymi did not write so (a hash that is not `v2:` and 64 lowercase hex digits, a
sequence that is not a 64-bit integer: a tampered row) is kept as read, in `odd`.

`Heads` is a read-only mapping of stream to `(sequence, hash)`, as the dict it replaces was: a head is made
again, as the same values, when it is asked for. Its places (the order the heads were read in) are the same in
a split scan's forked later part, which sends streams back by place.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

V2_PREFIX = "v2:"  # a v2 hash: this, then the sha256 in lowercase hex
_DIGEST = 32  # bytes of a sha256
_HEX = 2 * _DIGEST
_NO_SEQUENCE = -(2**63)  # in `seqs` at an odd head's place: no row's sequence matches it in `is_head`


class Heads(Mapping[str, tuple[int, str]]):
    __slots__ = ("digests", "odd", "places", "seqs")

    def __init__(self, heads: Iterable[tuple[str, Any, Any]] = (), *, size: int = 0) -> None:
        """`size`: the heads expected (the arrays are made at that size at once, not grown a head at a time)."""
        self.places: dict[str, int] = {}  # stream -> its place (the order it was read in)
        self.seqs = array("q", bytes(8 * size))
        self.digests = bytearray(_DIGEST * size)
        self.odd: dict[int, tuple[Any, Any]] = {}  # place -> (sequence, hash) as read, when they do not pack
        for stream, seq, digest in heads:
            self.add(stream, seq, digest)
        del self.seqs[len(self.places) :], self.digests[_DIGEST * len(self.places) :]

    @classmethod
    def of(cls, heads: Mapping[str, tuple[int, str]]) -> Heads:
        """`heads` packed (itself when it is packed already)."""
        if isinstance(heads, Heads):
            return heads
        return cls((stream, seq, digest) for stream, (seq, digest) in heads.items())

    def add(self, stream: str, seq: Any, digest: Any) -> None:
        """The head of `stream` (a later one replaces an earlier one, as in a dict)."""
        place = self.places.get(stream)
        if place is None:
            place = self.places[stream] = len(self.places)
            if place == len(self.seqs):
                self.seqs.append(_NO_SEQUENCE)
                self.digests += bytes(_DIGEST)
        packed = _packed(digest)
        if packed is None or type(seq) is not int or not _NO_SEQUENCE < seq < 2**63:
            self.odd[place] = (seq, digest)
            self.seqs[place] = _NO_SEQUENCE
            return
        self.odd.pop(place, None)
        self.seqs[place] = seq
        self.digests[place * _DIGEST : (place + 1) * _DIGEST] = packed

    def at(self, place: int) -> tuple[int, str]:
        """The head at `place`, as it was read."""
        odd = self.odd.get(place)
        if odd is not None:
            return odd
        return self.seqs[place], V2_PREFIX + self.digests[place * _DIGEST : (place + 1) * _DIGEST].hex()

    def is_head(self, place: int, seq: int, digest: str) -> bool:
        """Whether (seq, digest) is the head at `place` (cheap when the sequence is not the head's)."""
        return self.seqs[place] == seq and self.at(place)[1] == digest

    def __getitem__(self, stream: str) -> tuple[int, str]:
        return self.at(self.places[stream])

    def __contains__(self, stream: object) -> bool:
        return stream in self.places

    def __iter__(self) -> Iterator[str]:
        return iter(self.places)

    def __len__(self) -> int:
        return len(self.places)


def _packed(digest: Any) -> bytes | None:
    """The 32 bytes a `v2:` hash spells, when it spells them as zymi writes them (lowercase); else None."""
    if type(digest) is not str or len(digest) != len(V2_PREFIX) + _HEX or not digest.startswith(V2_PREFIX):
        return None
    try:
        packed = bytes.fromhex(digest[len(V2_PREFIX) :])
    except ValueError:
        return None
    return packed if packed.hex() == digest[len(V2_PREFIX) :] else None
