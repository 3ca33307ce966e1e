"""The kind tags of a long run's rows, by id, one byte an id: what `EventReader.kinds_of` answers, kept compact.

A million-event run's kinds as a dict of id -> tag held ~100 MB at once (an int key and a hash entry per row,
issue 34: the dashboard's peak RSS on one long run). Here each id of the run's span holds its tag's number in a
`bytearray` (0: not known), the tags themselves listed once; the reader is asked a chunk of ids at a time, so
its answer (a dict of one chunk) never holds the whole run either. A run whose ids are spread thin over the store
(a span of more than SPREAD times their number) keeps a dict, as does any tag past the 255th (a hostile store)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SPREAD = 16  # a span of more ids than this many times the run's rows is kept as a dict (a byte each would weigh more)
MAX_CODES = 255  # tag numbers a byte holds (0 is "not known")


class KindCodes:
    """The tag of each id of [lo, hi] known so far (`add`), read back by `get`."""

    def __init__(self, ids: Sequence[int]) -> None:
        self.lo = min(ids) if ids else 0
        span = max(ids) - self.lo + 1 if ids else 0
        self.codes = bytearray(span) if span <= SPREAD * len(ids) else bytearray()
        self.tags: list[str] = [""]  # tag of each number (0: not known)
        self._number: dict[str, int] = {}
        self.other: dict[int, str] = {}  # ids outside `codes`, or of a tag past MAX_CODES

    def add(self, kinds: Mapping[int, str]) -> None:
        lo, codes, number, span = self.lo, self.codes, self._number, len(self.codes)
        for gid, tag in kinds.items():
            n = number.get(tag)
            if n is None and len(self.tags) <= MAX_CODES:
                n = number[tag] = len(self.tags)
                self.tags.append(tag)
            if n is not None and 0 <= gid - lo < span:
                codes[gid - lo] = n
            else:
                self.other[gid] = tag

    def get(self, gid: int, default: str) -> str:
        at = gid - self.lo
        if 0 <= at < len(self.codes) and (n := self.codes[at]):
            return self.tags[n]
        return self.other.get(gid, default)

    def __len__(self) -> int:
        return len(self.codes) - self.codes.count(0) + len(self.other)
