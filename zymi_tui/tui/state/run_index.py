"""A run's index (global id, stream, sequence, kind tag of each event) and its laid-out list, kept in
columns: at a million events a list of 4-tuples costs ~130 bytes an event (the tuple and two ints), these
arrays ~24 (issue 34: the dashboard at a million events in 100 MB). Rows are made as `IndexRow` tuples when
one is read, so the screens see the same rows as before."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import overload

from zymi_tui.events.store import IdRow, IndexRow
from zymi_tui.tui.state.kind_codes import KindCodes


@dataclass(frozen=True, slots=True)
class Header:
    group: str  # RUN_GROUP or a step id
    count: int

    @property
    def title(self) -> str:
        name = "run stream" if self.group == "" else f"step {self.group}"
        return f"── {name} ({self.count} event{'s' if self.count != 1 else ''})"


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
    """A run's rows in columns: ids and sequences as 8-byte integers, streams and kinds by number. A sequence
    that is no 64-bit integer (a damaged store's) is kept aside as it was read."""

    __slots__ = ("_gids", "_odd", "_seqs", "_stream", "_streams", "_tag", "_tags")

    def __init__(self, rows: Iterable[IndexRow] = ()) -> None:
        self._gids = array("q")
        self._seqs = array("q")
        self._stream = array("I")
        self._tag = array("I")
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

    def append(self, row: IndexRow) -> None:
        gid, stream, seq, tag = row
        at = len(self._gids)
        self._gids.append(gid)
        try:
            self._seqs.append(seq)
        except (TypeError, OverflowError):
            self._seqs.append(0)
            self._odd[at] = seq
        self._stream.append(self._streams.of(stream))
        self._tag.append(self._tags.of(tag))

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

    def streams(self) -> list[str]:
        """Every stream, in the order of its first row."""
        return list(self._streams.names)

    def retag(self, kinds: KindCodes) -> None:
        """Each row's kind from `kinds` (by id); rows it does not know keep theirs."""
        codes, of, names = self._tag, self._tags.of, self._tags.names
        for i, gid in enumerate(self._gids):
            codes[i] = of(kinds.get(gid, names[codes[i]]))


class Items:
    """A laid-out events list: each entry a row of a RunIndex (its position) or a header, 8 bytes an entry."""

    __slots__ = ("_at", "_headers", "rows")

    def __init__(self, rows: RunIndex) -> None:
        self.rows = rows
        self._at = array("q")  # a row's position, or -1 - k for the k-th header
        self._headers: list[Header] = []

    def add_header(self, header: Header) -> None:
        self._at.append(-1 - len(self._headers))
        self._headers.append(header)

    def add_row(self, pos: int) -> None:
        self._at.append(pos)

    def set_header(self, i: int, header: Header) -> None:
        self._headers[-1 - self._at[i]] = header

    def gid(self, i: int) -> int | None:
        """The id of item i's row; None for a header."""
        at = self._at[i]
        return None if at < 0 else self.rows.gid(at)

    def __len__(self) -> int:
        return len(self._at)

    def _item(self, at: int) -> Header | IndexRow:
        return self._headers[-1 - at] if at < 0 else self.rows.row(at)

    @overload
    def __getitem__(self, i: int) -> Header | IndexRow: ...
    @overload
    def __getitem__(self, i: slice) -> list[Header | IndexRow]: ...
    def __getitem__(self, i: int | slice) -> Header | IndexRow | list[Header | IndexRow]:
        if isinstance(i, slice):
            return [self._item(at) for at in self._at[i]]
        return self._item(self._at[i])
