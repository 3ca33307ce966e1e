"""A builder's Layer C items with the old ones kept as columns, not objects (issue 34: flat memory on
one long run).

A replay of a store (a builder with a text source) keeps every item: zymi's rules can show any of them
again (a rebuild without the fresh filter, a compaction's span, other knobs). But an item hidden from
the builds made now by the fresh filter, `HOT_ITEMS` old, is seldom looked at: a long chat stream's
earlier runs. Such an item is kept as its figures (kind, sizes, masking state: 10 bytes; its sequence
is the builder's) and made again, in the state `Item.pack(hidden=True)` leaves an item in, when asked
for (its texts read back from the store). An `Item` and its sequence's int object were ~150 bytes.

`RawItems` holds a builder's items; `RawView` is a tail's items that are the builder's first `n`
items (the Layer C without the fresh filter, before any compaction), so that the tail does not hold
the old items either."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import SupportsIndex, overload

from zymi_tui.context.layer_c import _CUT, _DROPPED_CALL, ASSISTANT, TOOL, Item, TextSource

# an old item's state in a byte: what its masked form was made for, its masked text, its status
_FOR_NONE, _FOR_ITSELF, _FOR_HEAD = 0, 1, 2  # masked_for: -1, 0, the turn's assistant (the nearest before it)
_AUX_CALL, _AUX_CUT = 4, 8  # `_aux`: the call read back from its turn (`_DROPPED_CALL`), `_CUT`
_ERROR = 16
_FIT = 1 << 32  # (sizes in 4-byte columns)
MADE = 4096  # old items made again that are kept, so that one made twice is one object (heads)


class RawItems:
    """A builder's items in order: the newest as objects, those before `cold` as columns (`evict`); an
    old item that does not fit its columns is kept as it is."""

    __slots__ = (
        "_bytes", "_flags", "_hot", "_kept", "_kinds", "_last_head", "_made", "_masked", "_off",
        "cold", "seqs", "texts",
    )  # fmt: skip

    def __init__(self, texts: TextSource | None, seqs: array[int]) -> None:
        self.texts = texts
        self.seqs = seqs  # the builder's sequence of each item (set again when it makes a new array)
        self.cold = 0  # items [0, cold) are kept as columns (or in `_kept`)
        self._hot: list[Item | None] = []  # items from `_off` on (None: made cold since)
        self._off = 0
        self._kinds, self._flags = array("B"), array("B")
        self._bytes, self._masked = array("I"), array("I")
        self._kept: dict[int, Item] = {}
        self._made: dict[int, Item] = {}
        self._last_head: tuple[int, Item] | None = None  # the last assistant made cold

    def __len__(self) -> int:
        return self._off + len(self._hot)

    @overload
    def __getitem__(self, i: SupportsIndex) -> Item: ...
    @overload
    def __getitem__(self, i: slice) -> list[Item]: ...
    def __getitem__(self, i: SupportsIndex | slice) -> Item | list[Item]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if start >= self.cold and step == 1:
                return self._hot[start - self._off : stop - self._off]  # type: ignore[return-value]  # (hot: no None)
            return [self.at(j) for j in range(start, stop, step)]
        j = i.__index__()
        if j < 0:
            j += len(self)
        if not 0 <= j < len(self):
            raise IndexError(i)
        return self.at(j)

    def at(self, j: int) -> Item:
        """Item `j` (0 <= j < len)."""
        if j >= self.cold:
            return self._hot[j - self._off]  # type: ignore[return-value]  # (hot: not None)
        kept = self._kept.get(j)
        return kept if kept is not None else self._made_again(j)

    def __iter__(self) -> Iterator[Item]:
        for j in range(len(self)):
            yield self.at(j)

    def append(self, item: Item) -> None:
        self._hot.append(item)

    def __iadd__(self, items: Iterable[Item]) -> RawItems:
        self._hot += items
        return self

    def copy(self) -> RawItems:
        other = RawItems(self.texts, self.seqs)
        other.cold, other._hot, other._off = self.cold, list(self._hot), self._off
        other._kinds, other._flags = self._kinds[:], self._flags[:]
        other._bytes, other._masked = self._bytes[:], self._masked[:]
        other._kept, other._last_head = dict(self._kept), self._last_head
        return other

    def evict(self) -> None:
        """Item `cold`, the oldest kept as an object, kept as columns: its text dropped (read back from
        `texts`), its masked form made again when shown, as `Item.pack(hidden=True)` leaves it."""
        j = self.cold
        k = j - self._off
        r = self._hot[k]
        assert r is not None
        kind, held_for, aux = r.kind, r.masked_for, r._aux
        fits = type(r) is Item and r.bytes < _FIT and r.masked_bytes < _FIT and self.texts is not None
        fits = fits and (r._message is not None or r._packed is self.texts)
        flags = _ERROR if r._error else 0
        if type(held_for) is not int:  # the turn's assistant: the one found again (the last made cold)
            flags |= _FOR_HEAD
            last = self._last_head
            fits = fits and kind == TOOL and last is not None and last[1] is held_for and last[0] == self._head(j)
            if aux is not None:
                flags |= _AUX_CALL
        elif held_for == 0:
            flags |= _FOR_ITSELF
        if aux is not None and not flags & _AUX_CALL:
            if kind == ASSISTANT and isinstance(aux, str):
                flags |= _AUX_CUT
            else:
                fits = False
        self._kinds.append(kind)
        self._flags.append(flags)
        self._bytes.append(r.bytes if fits else 0)
        self._masked.append(r.masked_bytes if fits else 0)
        if not fits:
            self._kept[j] = r
        if kind == ASSISTANT:
            self._last_head = (j, r)
        self._hot[k] = None
        self.cold = j + 1
        if k >= 1023:  # (the list's front trimmed in blocks, not an item at a time)
            del self._hot[: k + 1]
            self._off = j + 1

    def _made_again(self, j: int) -> Item:
        made = self._made.get(j)
        if made is not None:
            return made
        if len(self._made) >= MADE:
            self._made.clear()
        flags = self._flags[j]
        r = Item.__new__(Item)
        self._made[j] = r
        r.seq, r.kind, r.bytes, r.masked_bytes = self.seqs[j], self._kinds[j], self._bytes[j], self._masked[j]
        r._message, r._packed, r.masked, r._error = None, self.texts, None, bool(flags & _ERROR)
        r._aux = _DROPPED_CALL if flags & _AUX_CALL else _CUT if flags & _AUX_CUT else None
        held_for = flags & 3
        r.masked_for = -1 if held_for == _FOR_NONE else 0 if held_for == _FOR_ITSELF else self.at(self._head(j))
        return r

    def _head(self, j: int) -> int:
        """The turn's assistant of old tool result `j`: the nearest item before it that is not one (-1:
        none)."""
        h = j - 1
        while h >= 0 and self._kinds[h] == TOOL:
            h -= 1
        return h


class RawView:
    """A tail's items that are its builder's first `n` (`RawItems`), appended as the builder appends
    them; an item that is not the builder's next (a copy masked for another turn) turns the view into
    a list of its own (`_list`)."""

    __slots__ = ("_list", "n", "raw")

    def __init__(self, raw: RawItems, n: int) -> None:
        self.raw, self.n = raw, n
        self._list: list[Item] | None = None

    def __len__(self) -> int:
        return self.n if self._list is None else len(self._list)

    @overload
    def __getitem__(self, i: SupportsIndex) -> Item: ...
    @overload
    def __getitem__(self, i: slice) -> list[Item]: ...
    def __getitem__(self, i: SupportsIndex | slice) -> Item | list[Item]:
        if self._list is not None:
            return self._list[i]
        if isinstance(i, slice):
            return [self.raw.at(j) for j in range(*i.indices(self.n))]
        j = i.__index__()
        if j < 0:
            j += self.n
        if not 0 <= j < self.n:
            raise IndexError(i)
        return self.raw.at(j)

    def __iter__(self) -> Iterator[Item]:
        if self._list is not None:
            return iter(self._list)
        return (self.raw.at(j) for j in range(self.n))

    def append(self, item: Item) -> None:
        if self._list is None:
            raw = self.raw
            k = self.n - raw._off
            if 0 <= k < len(raw._hot) and raw._hot[k] is item:  # (the builder's next item: hot)
                self.n += 1
                return
            self._list = list(self)
        self._list.append(item)

    def extend(self, items: Iterable[Item]) -> None:
        for r in items:
            self.append(r)

    def copy(self) -> RawView | list[Item]:
        if self._list is not None:
            return list(self._list)
        return RawView(self.raw, self.n)

    @property
    def aligned(self) -> bool:
        """Whether these are still the builder's first `n` items."""
        return self._list is None
