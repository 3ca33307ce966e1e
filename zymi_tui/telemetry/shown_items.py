"""A value made of each Layer C item a call's context shows (its `Shape`: items [start, n) of the step's
tail, those before `mask_end` masked), per step stream, without making the context's entries: each
item's value is made once while the item is shown the same way, and reused by the step's next calls,
which resend it. The exports make their per-message texts and figures here (otel_inputs.py,
lhar_figures.py).

An item is known by the object and by how it is shown (in full, or masked): an item's masked form
is fixed once it has one (a tail that masks an item again for another turn masks a copy), and its
full text never changes, so the same (item, masked) always shows the same text. An item that leaves
the observation window is shown masked from then on: a new key, a new value. Only the items of the
last call of the `OPEN_STREAMS` latest step streams are held (a step's are let go when it ends).

A call whose Layer C is a forward move of its step's previous call's (`Window.follows`) looks only at
the items that left, entered, or went masked; any other (a compaction, a rebuild, a mask end moved
back, a step's first call) walks its items, reusing the values of those shown alike. A `Tally` kept
with a window is told what left, went masked and entered, so running figures over the window cost
what changed, not the window."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from zymi_tui.context.layer_c import Item, Tail, read_back
from zymi_tui.events.messages import MessageModel
from zymi_tui.telemetry.message_cache import OPEN_STREAMS

T = TypeVar("T")
HEADS_KEPT = 256  # Layer A, memory (and summary) messages' values kept by value by the exports: a few per agent
T_contra = TypeVar("T_contra", contravariant=True)


class Tally(Protocol[T_contra]):
    """Running figures over a window's values, in order (each value counted once)."""

    def add(self, values: Sequence[T_contra]) -> None:
        """These values entered, at the window's end."""

    def remove(self, values: Sequence[T_contra]) -> None:
        """These values left, from the window's start."""

    def replace(self, places: Sequence[int], was: Sequence[T_contra], now: Sequence[T_contra]) -> None:
        """Values in the window went masked: the value at `places[k]`, `was[k]`, is now `now[k]`."""


class Window(Generic[T]):
    """A step stream's last call's Layer C values: items [start, n) of `tail` (shown masked before
    `mask_end`), their keys and values in order, the values by key (`held`: an item is held, so its id
    stays its own), and the window's `tally` (None: none kept)."""

    __slots__ = ("held", "keys", "mask_end", "n", "start", "tail", "tally", "values")

    def __init__(self, tail: Tail, mask_end: int, n: int, start: int, tally: Tally[T] | None) -> None:
        self.tail, self.mask_end, self.n, self.start, self.tally = tail, mask_end, n, start, tally
        self.keys: list[int] = []
        self.values: list[T] = []
        self.held: dict[int, tuple[Item, T]] = {}

    def follows(self, tail: Tail, mask_end: int, n: int, start: int) -> bool:
        """Whether items [start, n) of `tail` are a forward move of this window: the same tail, its
        start, mask end and end no earlier. Then an item it showed is shown the same way unless the mask
        end passed it: a tail's items are only appended, and an item's turn and masked form are fixed
        once it is in a tail's turn (an item masked for another turn is copied: `Tail.append`)."""
        return (
            tail is self.tail and start >= self.start and n >= self.n and mask_end >= self.mask_end and start <= self.n
        )


class ShownItems(Generic[T]):
    """`make(item, masked)` for the Layer C items of each call's context (`window`), made once per
    item shown alike; `tally()` makes a new window's `Tally` (None: no tally)."""

    def __init__(
        self, make: Callable[[Item, bool], T], tally: Callable[[], Tally[T]] | None = None, *, reads_back: bool = True
    ) -> None:
        """`reads_back=False`: the items' dropped texts are not read back before `make` is asked."""
        self.make, self.tally, self.reads_back = make, tally, reads_back
        self.streams: OrderedDict[str, Window[T]] = OrderedDict()  # step stream -> its last call's window

    def window(self, stream: str, tail: Tail, mask_end: int, n: int, start: int) -> Window[T]:
        """The values of items [start, n) of `tail`, shown masked before `mask_end`, in a call of `stream`."""
        w = self.streams.pop(stream, None)
        if w is not None and w.follows(tail, mask_end, n, start):
            self._move(w, mask_end, n, start)
        else:
            w = self._walk(w, tail, mask_end, n, start)
        self.streams[stream] = w
        if len(self.streams) > OPEN_STREAMS:
            self.streams.popitem(last=False)
        return w

    def _walk(self, old: Window[T] | None, tail: Tail, mask_end: int, n: int, start: int) -> Window[T]:
        """The window made item by item, taking the values of the items `old` showed alike."""
        w = Window(tail, mask_end, n, start, self.tally() if self.tally is not None else None)
        missing: list[tuple[int, int, int]] = []  # (place in values, index in items, key)
        _append(w, start, n, old.held if old is not None else {}, missing)
        self._fill(w, missing)
        if w.tally is not None:
            w.tally.add(w.values)
        return w

    def _move(self, w: Window[T], mask_end: int, n: int, start: int) -> None:
        """Bring `w` forward to items [start, n) shown masked before `mask_end` (`Window.follows`)."""
        tail = w.tail
        items, keys, values, held = tail.items, w.keys, w.values, w.held
        left = start - w.start
        gone = values[:left]
        if left:
            for key in keys[:left]:
                held.pop(key, None)
            del keys[:left], values[:left]
        missing: list[tuple[int, int, int]] = []
        for i in range(max(w.mask_end, start), min(mask_end, w.n)):  # shown in full before, masked now
            item = items[i]
            key = _key(item, item.masked_for != -1 and tail.in_turn(i))
            at = i - start
            if key != keys[at]:
                held.pop(keys[at], None)
                keys[at] = key
                missing.append((at, i, key))
        went = len(missing)
        was = [values[at] for at, _, _ in missing]
        entered = w.n
        w.mask_end, w.n, w.start = mask_end, n, start
        _append(w, entered, n, held, missing)
        self._fill(w, missing)
        tally = w.tally
        if tally is not None:
            if gone:
                tally.remove(gone)
            if went:
                places = [at for at, _, _ in missing[:went]]
                tally.replace(places, was, [values[at] for at in places])
            if n > entered:
                tally.add(values[entered - start :])

    def _fill(self, w: Window[T], missing: list[tuple[int, int, int]]) -> None:
        """Make the values of the items not held (their dropped texts read back in one batch)."""
        if not missing:
            return
        tail, mask_end = w.tail, w.mask_end
        items = tail.items
        if self.reads_back:
            read_back((items[i], shown_masked_at(tail, i, mask_end)) for _, i, _ in missing)
        values, held, make = w.values, w.held, self.make
        for at, i, key in missing:
            item = items[i]
            made = make(item, shown_masked_at(tail, i, mask_end))
            held[key] = (item, made)
            values[at] = made

    def forget(self, stream: str) -> None:
        """The step is over: its items are not needed again."""
        self.streams.pop(stream, None)


def shown_masked_at(tail: Tail, i: int, mask_end: int) -> bool:
    """Whether item `i` of `tail` is shown in its masked form (`splice.shown_masked`, for one item)."""
    return i < mask_end and tail.items[i].masked_for != -1 and tail.in_turn(i)


def _key(item: Item, masked: bool) -> int:
    """How an item is known among a window's: by the object and, shown masked in a form of its own
    (its own text, or a simulated item's own estimated size), as masked (else its masked form is its
    message: the same key)."""
    return id(item) * 2 + 1 if masked and (item.has_masked_text() or item.simulated) else id(item) * 2


def shown(item: Item, masked: bool) -> MessageModel:
    """The item's message as the context shows it (a dropped text read back first: `read_back`)."""
    return item.masked_message() if masked else item.message


_PENDING: object = object()  # a place in a window's values whose item's value is being made


def _append(
    w: Window[T], first: int, n: int, known: dict[int, tuple[Item, T]], missing: list[tuple[int, int, int]]
) -> None:
    """Items [first, n) of `w`'s tail appended to its keys and values (masked before `w.mask_end`): a
    value `known` holds is taken (and kept in `w.held`), the others noted in `missing` for `_fill`."""
    tail, keys, values, held = w.tail, w.keys, w.values, w.held
    items, mask_end = tail.items, w.mask_end
    for i in range(first, n):
        item = items[i]
        key = _key(item, i < mask_end and item.masked_for != -1 and tail.in_turn(i))
        keys.append(key)
        got = known.get(key)
        if got is None:
            missing.append((len(values), i, key))
            values.append(_PENDING)  # type: ignore[arg-type]  # (set by `_fill`)
        else:
            held[key] = got
            values.append(got[1])
