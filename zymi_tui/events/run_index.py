"""A run's index (global id, stream, sequence, kind tag of each event) kept in columns: at a million events a
list of 4-tuples costs ~130 bytes an event (the tuple and two ints), these arrays ~10 (issue 34: the dashboard
at a million events in 100 MB). Rows are made as `IndexRow` tuples when one is read. A reader builds one from
its pages (`EventReader.run_index`), so no tuple a row is held while a long run is listed. Each column is as
narrow as its values allow: ids and sequences 4 bytes (8 past 2**31), streams and kinds a byte by number (2 or
4 past 255 or 65,535 names); a value that does not fit makes its column a wider copy once."""

from __future__ import annotations

import bisect
import heapq
import operator
from array import array
from collections.abc import Callable, Iterable, Iterator
from itertools import islice, repeat
from typing import Any, overload

IndexRow = tuple[int, str, int, str]  # (global id, stream id, sequence, kind tag): a row without its data
IdRow = tuple[int, str, int]  # (global id, stream id, sequence): where a row is, not what it is
MERGE_CHUNK = 1 << 16  # rows cut off a part at a time by `merged` (~0.7 MB of columns)
_WIDER = {"B": "H", "H": "I", "i": "q"}  # a column's next type when a value does not fit it


def widened(column: array[int], value: int) -> array[int]:
    """`column` with `value` appended: the column itself, or (the value does not fit its type) a copy in the
    narrowest wider type that holds it. OverflowError when none does (past 8 bytes)."""
    while True:
        try:
            column.append(value)
            return column
        except OverflowError:
            wider = _WIDER.get(column.typecode)
            if wider is None:
                raise
            column = array(wider, column)


def code_type(names: int) -> str:
    """The narrowest array type of the numbers of `names` texts."""
    return "B" if names <= 1 << 8 else "H" if names <= 1 << 16 else "I"


def fitted(codes: array[int], code: int) -> array[int]:
    """A column of names' numbers that holds `code`: `codes` itself, or a wider copy."""
    return codes if code < 1 << 8 * codes.itemsize else array(code_type(code + 1), codes)


class _Names:
    """Texts (streams, kind tags) by a number each: a column holds the numbers."""

    __slots__ = ("code", "names")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.code: dict[str, int] = {}

    def of(self, name: str) -> int:
        n = self.code.get(name)
        if n is None:
            n = self.code[name] = len(self.names)
            self.names.append(name)
        return n


class RunIndex:
    """A run's rows in columns: ids and sequences as integers, streams and kinds by number, each column as
    narrow as its values allow. A sequence that is no 64-bit integer (a damaged store's) is kept aside as it
    was read."""

    __slots__ = ("_gids", "_odd", "_seqs", "_stream", "_streams", "_tag", "_tags")

    def __init__(self, rows: Iterable[IndexRow] = ()) -> None:
        self._gids = array("i")
        self._seqs = array("i")
        self._stream = array("B")
        self._tag = array("B")
        self._streams = _Names()
        self._tags = _Names()
        self._odd: dict[int, object] = {}  # position -> a sequence that is not a 64-bit integer
        self.extend(rows)

    @classmethod
    def from_ids(cls, ids: list[IdRow]) -> RunIndex:
        """A run listed from its ids (the kinds to come: "" each), `ids` emptied as they are taken in, so the
        id rows and the columns are not held side by side."""
        index = cls()
        ids.reverse()
        while ids:
            gid, stream, seq = ids.pop()
            index.append((gid, stream, seq, ""))
        return index

    def add_page(self, stream: str, page: Iterable[tuple[int, Any]]) -> None:
        """(id, sequence) rows of one stream, the kinds to come ("" each)."""
        code, blank = self._streams.of(stream), self._tags.of("")
        gids, first = self._gids, len(self._gids)
        for gid, seq in page:
            self._put_seq(seq)
            try:
                gids.append(gid)
            except OverflowError:
                self._gids = gids = widened(gids, gid)
        added = len(gids) - first
        self._stream = fitted(self._stream, code)
        self._stream.extend(repeat(code, added))
        self._tag = fitted(self._tag, blank)
        self._tag.extend(repeat(blank, added))

    @classmethod
    def merged(cls, parts: list[RunIndex]) -> RunIndex:
        """The rows of several indexes (each of one stream, say) in id order (ids are unique in a store). The
        parts are emptied as they are taken in, unless one holds an odd sequence or is not in id order."""
        if len(parts) == 1 and parts[0].ascending():
            return parts[0]
        if not any(part._odd for part in parts) and all(part.ascending() for part in parts):
            return cls._merged_from_the_ends(parts)
        out = cls()
        keyed = []
        for k, part in enumerate(parts):
            order = part.id_order()
            keyed.append(zip(map(part._gids.__getitem__, order), repeat(k), order, strict=False))
        for _, k, i in heapq.merge(*keyed):
            out.append(parts[k].row(i))
        return out

    @classmethod
    def _merged_from_the_ends(cls, parts: list[RunIndex]) -> RunIndex:
        """`merged` of parts in id order: their newest rows (at most `MERGE_CHUNK` of a part a time) are merged
        into a chunk and cut off (each part shrinks as it is taken), and the chunks joined oldest first (each
        freed as it is added), so a long run's index is not held twice (two streams of a 1M-event run, their
        rows interleaved: ~24 MB of parts beside ~24 MB merged)."""
        out = cls()
        stream_codes = [[out._streams.of(name) for name in part._streams.names] for part in parts]
        tag_codes = [[out._tags.of(name) for name in part._tags.names] for part in parts]
        chunks: list[tuple[array[int], ...]] = []  # out's columns, newest rows first
        # each column of the chunks as wide as the widest part's (the codes: as out's names need)
        types = [max((p._gids.typecode for p in parts), key="iq".index),
                 max((p._seqs.typecode for p in parts), key="iq".index),
                 code_type(len(out._streams.names)), code_type(len(out._tags.names))]  # fmt: skip
        while any(parts):
            # rows above `floor` are among each part's last MERGE_CHUNK: the newest of all the parts
            floor = max((p._gids[-1 - MERGE_CHUNK] for p in parts if len(p) > MERGE_CHUNK), default=None)
            cuts = [(k, 0 if floor is None else bisect.bisect_right(p._gids, floor)) for k, p in enumerate(parts)]
            gids, seqs, streams, tags = (array(t) for t in types)
            keyed = [zip(parts[k]._gids[cut:], repeat(k), range(cut, len(parts[k])), strict=False) for k, cut in cuts]
            for gid, k, i in heapq.merge(*keyed):
                part = parts[k]
                gids.append(gid)
                seqs.append(part._seqs[i])
                streams.append(stream_codes[k][part._stream[i]])
                tags.append(tag_codes[k][part._tag[i]])
            chunks.append((gids, seqs, streams, tags))
            for k, cut in cuts:
                part = parts[k]
                for column in (part._gids, part._seqs, part._stream, part._tag):
                    del column[cut:]
        out._gids, out._seqs, out._stream, out._tag = (array(t) for t in types)
        while chunks:
            gids, seqs, streams, tags = chunks.pop()
            out._gids.extend(gids)
            out._seqs.extend(seqs)
            out._stream.extend(streams)
            out._tag.extend(tags)
        return out

    def ascending(self) -> bool:
        g = self._gids
        return all(map(operator.lt, g, islice(g, 1, None)))

    def id_order(self) -> Iterable[int]:
        """Positions in id order (a damaged stream's sequence order may not be its id order)."""
        return range(len(self)) if self.ascending() else sorted(range(len(self)), key=self._gids.__getitem__)

    def _put_seq(self, seq: object) -> None:
        try:
            self._seqs.append(seq)  # type: ignore[arg-type]  # an int, unless the store is damaged
        except TypeError:
            self._odd[len(self._seqs)] = seq
            self._seqs.append(0)
        except OverflowError:
            try:
                self._seqs = widened(self._seqs, seq)  # type: ignore[arg-type]
            except OverflowError:  # no 64-bit integer
                self._odd[len(self._seqs)] = seq
                self._seqs.append(0)

    def _put_gid(self, gid: int) -> None:
        try:
            self._gids.append(gid)
        except OverflowError:
            self._gids = widened(self._gids, gid)

    def append(self, row: IndexRow) -> None:
        gid, stream, seq, tag = row
        self._put_seq(seq)
        self._put_gid(gid)
        code = self._streams.of(stream)
        self._stream = fitted(self._stream, code)
        self._stream.append(code)
        code = self._tags.of(tag)
        self._tag = fitted(self._tag, code)
        self._tag.append(code)

    def extend(self, rows: Iterable[IndexRow]) -> None:
        for row in rows:
            self.append(row)

    def __len__(self) -> int:
        return len(self._gids)

    def row(self, i: int) -> IndexRow:
        seq = self._odd.get(i, self._seqs[i]) if self._odd else self._seqs[i]
        return (self._gids[i], self._streams.names[self._stream[i]], seq, self._tags.names[self._tag[i]])  # type: ignore[return-value]

    @overload
    def __getitem__(self, i: int) -> IndexRow: ...
    @overload
    def __getitem__(self, i: slice) -> list[IndexRow]: ...
    def __getitem__(self, i: int | slice) -> IndexRow | list[IndexRow]:
        if isinstance(i, slice):
            return [self.row(k) for k in range(*i.indices(len(self)))]
        return self.row(i + len(self) if i < 0 else i)

    def __iter__(self) -> Iterator[IndexRow]:
        return (self.row(i) for i in range(len(self)))

    def gid(self, i: int) -> int:
        return self._gids[i]

    def stream(self, i: int) -> str:
        return self._streams.names[self._stream[i]]

    def tag(self, i: int) -> str:
        return self._tags.names[self._tag[i]]

    def gids(self) -> array[int]:
        """Every row's id (a copy)."""
        return array("q", self._gids)

    def gid_range(self, start: int, stop: int) -> array[int]:
        """The ids of rows [start, stop) (a copy of those alone)."""
        return self._gids[start:stop]

    def streams(self) -> list[str]:
        """Every stream, in the order of its first row."""
        return list(self._streams.names)

    def retag(self, kind_of: Callable[[int, str], str]) -> None:
        """Each row's kind: `kind_of(id, its kind now)`."""
        codes, of, names = self._tag, self._tags.of, self._tags.names
        for i, gid in enumerate(self._gids):
            code = of(kind_of(gid, names[codes[i]]))
            if code >= 1 << 8 * codes.itemsize:  # past 255 kinds (a hostile store)
                self._tag = codes = fitted(codes, code)
            codes[i] = code
