"""A call's `gen_ai.input.messages` made from where its rebuilt context's messages come from (its
`Shape`: Layer A, the memory snapshot, Layer C items [cut, n) of the step's tail, some shown masked),
without making the context's entries: each Layer C item's text is made once while the item is shown
the same way, and reused by the step's next calls, which resend it.

An item is known by the object and by how it is shown (in full, or masked): an item's masked form
is fixed once it has one (a tail that masks an item again for another turn masks a copy), and its
full text never changes, so the same (item, masked) always shows the same text. An item that leaves
the observation window is shown masked from then on: a new key, a new text. Only the items of the
last call of the `OPEN_STREAMS` latest step streams are held (a step's are let go when it ends)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from zymi_tui.context.layer_c import Item, Tail, read_back
from zymi_tui.context.masking import memory_block
from zymi_tui.context.rendered import Shape
from zymi_tui.context.splice import prefix_entries
from zymi_tui.events.messages import MessageModel, SystemMessage
from zymi_tui.telemetry.message_cache import OPEN_STREAMS

Texts = tuple[str, bytes]  # `otel_content.message_texts`: a message's JSON and that JSON escaped, in UTF-8
HEADS_KEPT = 256  # Layer A and memory messages' texts kept, by value (a few per agent and snapshot)


def shape_length(shape: Shape) -> int:
    """How many messages the context of `shape` holds (`len(rendered.entries)`, without making them)."""
    return len(prefix_entries(shape.prefix)) + (1 if shape.memory else 0) + shape.n - shape.cut


class _Window:
    """A step stream's last call's Layer C messages: items [start, n) of `tail` (shown masked before
    `mask_end`), their keys and texts in order, and the texts by key (`held`: an item is held, so its id
    stays its own)."""

    __slots__ = ("held", "keys", "mask_end", "n", "start", "tail", "texts")

    def __init__(self, tail: Tail, mask_end: int, n: int, start: int) -> None:
        self.tail, self.mask_end, self.n, self.start = tail, mask_end, n, start
        self.keys: list[int] = []
        self.texts: list[Texts] = []
        self.held: dict[int, tuple[Item, Texts]] = {}

    def follows(self, tail: Tail, mask_end: int, n: int, start: int) -> bool:
        """Whether items [start, n) of `tail` are a forward move of this window: the same tail, its
        start, mask end and end no earlier. Then an item it showed is shown the same way unless the mask
        end passed it: a tail's items are only appended, and an item's turn and masked form are fixed
        once it is in a tail's turn (an item masked for another turn is copied: `Tail.append`)."""
        return (
            tail is self.tail and start >= self.start and n >= self.n and mask_end >= self.mask_end and start <= self.n
        )


class ShownInputs:
    """`make(message)` for the messages of each call's context (`inputs`), made once per item shown.
    A call whose Layer C is a forward move of its step's previous call's (`_Window.follows`) looks
    only at the items that left, entered, or went masked; any other (a compaction, a rebuild, a mask
    end moved back, a step's first call) walks its items, reusing the texts of those shown alike."""

    def __init__(self, make: Callable[[MessageModel], Texts]) -> None:
        self.make = make
        self.streams: OrderedDict[str, _Window] = OrderedDict()  # step stream -> its last call's window
        self.heads: dict[MessageModel, Texts] = {}

    def inputs(
        self, stream: str, shape: Shape, *, drop_prefix: bool, prompt_first: bool
    ) -> tuple[SystemMessage | None, list[Texts]]:
        """(the system prompt, the other messages' texts) of a call's context: Layer A left out with
        `drop_prefix`; with `prompt_first`, a leading system message is the prompt, not an input."""
        head: list[MessageModel] = [] if drop_prefix else [e.message for e in prefix_entries(shape.prefix)]
        if shape.memory:
            head.append(SystemMessage(content=memory_block(shape.memory).text))
        tail, cut, n, mask_end = shape.tail, shape.cut, shape.n, shape.mask_end
        prompt: SystemMessage | None = None
        start = cut
        if prompt_first and head:
            first = head[0]
            if isinstance(first, SystemMessage):
                prompt = first
                del head[0]
        elif prompt_first and n > cut:
            item, masked = tail.items[cut], _masked(tail, cut, mask_end)
            read_back([(item, masked)])
            m = _shown(item, masked)
            if isinstance(m, SystemMessage):
                prompt, start = m, cut + 1
        texts = [self._head(m) for m in head]
        w = self.streams.pop(stream, None)
        if w is not None and w.follows(tail, mask_end, n, start):
            self._move(w, mask_end, n, start)
        else:
            w = self._walk(w, tail, mask_end, n, start)
        self.streams[stream] = w
        if len(self.streams) > OPEN_STREAMS:
            self.streams.popitem(last=False)
        texts += w.texts
        return prompt, texts

    def _walk(self, old: _Window | None, tail: Tail, mask_end: int, n: int, start: int) -> _Window:
        """The window made item by item, taking the texts of the items `old` showed alike."""
        w = _Window(tail, mask_end, n, start)
        missing: list[tuple[int, int, int]] = []  # (place in texts, index in items, key)
        _append(w, start, n, old.held if old is not None else {}, missing)
        self._fill(w, missing)
        return w

    def _move(self, w: _Window, mask_end: int, n: int, start: int) -> None:
        """Bring `w` forward to items [start, n) shown masked before `mask_end` (`_Window.follows`)."""
        tail = w.tail
        items, keys, texts, held = tail.items, w.keys, w.texts, w.held
        left = start - w.start
        if left:
            for key in keys[:left]:
                held.pop(key, None)
            del keys[:left], texts[:left]
        missing: list[tuple[int, int, int]] = []
        for i in range(max(w.mask_end, start), min(mask_end, w.n)):  # shown in full before, masked now
            item = items[i]
            key = _key(item, item.masked_for != -1 and tail.in_turn(i))
            at = i - start
            if key != keys[at]:
                held.pop(keys[at], None)
                keys[at] = key
                missing.append((at, i, key))
        entered = w.n
        w.mask_end, w.n, w.start = mask_end, n, start
        _append(w, entered, n, held, missing)
        self._fill(w, missing)

    def _fill(self, w: _Window, missing: list[tuple[int, int, int]]) -> None:
        """Make the texts of the items not held (their dropped texts read back in one batch)."""
        if not missing:
            return
        items = w.tail.items
        read_back((items[i], _masked(w.tail, i, w.mask_end)) for _, i, _ in missing)
        texts, held = w.texts, w.held
        for at, i, key in missing:
            item = items[i]
            made = self.make(_shown(item, _masked(w.tail, i, w.mask_end)))
            held[key] = (item, made)
            texts[at] = made

    def _head(self, m: MessageModel) -> Texts:
        got = self.heads.get(m)
        if got is None:
            if len(self.heads) >= HEADS_KEPT:
                self.heads.clear()
            got = self.heads[m] = self.make(m)
        return got

    def forget(self, stream: str) -> None:
        """The step is over: its items are not needed again."""
        self.streams.pop(stream, None)


_NONE: Texts = ("", b"")  # a place in a call's texts whose item's text is being made


def _masked(tail: Tail, i: int, mask_end: int) -> bool:
    """Whether item `i` of `tail` is shown in its masked form (`splice.shown_masked`, for one item)."""
    return i < mask_end and tail.items[i].masked_for != -1 and tail.in_turn(i)


def _key(item: Item, masked: bool) -> int:
    """How an item is known among a window's: by the object and, shown masked in a form of its own,
    as masked (else its masked form is its message: the same key)."""
    return id(item) * 2 + 1 if masked and item.has_masked_text() else id(item) * 2


def _shown(item: Item, masked: bool) -> MessageModel:
    """The item's message as the context shows it (a dropped text read back first: `read_back`)."""
    return item.masked_message() if masked else item.message


def _append(
    w: _Window, first: int, n: int, known: dict[int, tuple[Item, Texts]], missing: list[tuple[int, int, int]]
) -> None:
    """Items [first, n) of `w`'s tail appended to its keys and texts (masked before `w.mask_end`): a text
    `known` holds is taken (and kept in `w.held`), the others noted in `missing` for `_fill`."""
    tail, keys, texts, held = w.tail, w.keys, w.texts, w.held
    items, mask_end = tail.items, w.mask_end
    for i in range(first, n):
        item = items[i]
        key = _key(item, i < mask_end and item.masked_for != -1 and tail.in_turn(i))
        keys.append(key)
        got = known.get(key)
        if got is None:
            missing.append((len(texts), i, key))
            texts.append(_NONE)
        else:
            held[key] = got
            texts.append(got[1])
