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

from zymi_tui.context.layer_c import Item, read_back
from zymi_tui.context.masking import memory_block
from zymi_tui.context.rendered import Shape
from zymi_tui.context.splice import prefix_entries, shown_masked
from zymi_tui.events.messages import MessageModel, SystemMessage
from zymi_tui.telemetry.message_cache import OPEN_STREAMS

Texts = tuple[str, bytes]  # `otel_content.message_texts`: a message's JSON and that JSON escaped, in UTF-8
HEADS_KEPT = 256  # Layer A and memory messages' texts kept, by value (a few per agent and snapshot)


def shape_length(shape: Shape) -> int:
    """How many messages the context of `shape` holds (`len(rendered.entries)`, without making them)."""
    return len(prefix_entries(shape.prefix)) + (1 if shape.memory else 0) + shape.n - shape.cut


class ShownInputs:
    """`make(message)` for the messages of each call's context (`inputs`), made once per item shown."""

    def __init__(self, make: Callable[[MessageModel], Texts]) -> None:
        self.make = make
        # step stream -> its last call's items: (id(item) * 2 + masked) -> (item, texts); the item is held,
        # so its id stays its own
        self.streams: OrderedDict[str, dict[int, tuple[Item, Texts]]] = OrderedDict()
        self.heads: dict[MessageModel, Texts] = {}

    def inputs(
        self, stream: str, shape: Shape, *, drop_prefix: bool, prompt_first: bool
    ) -> tuple[SystemMessage | None, list[Texts]]:
        """(the system prompt, the other messages' texts) of a call's context: Layer A left out with
        `drop_prefix`; with `prompt_first`, a leading system message is the prompt, not an input."""
        head: list[MessageModel] = [] if drop_prefix else [e.message for e in prefix_entries(shape.prefix)]
        if shape.memory:
            head.append(SystemMessage(content=memory_block(shape.memory).text))
        tail, cut, n = shape.tail, shape.cut, shape.n
        items = tail.items
        masked = shown_masked(tail, cut, n, shape.mask_end)
        prompt: SystemMessage | None = None
        start = cut
        if prompt_first and head:
            first = head[0]
            if isinstance(first, SystemMessage):
                prompt = first
                del head[0]
        elif prompt_first and n > cut:
            read_back([(items[cut], masked[0])])
            m = _shown(items[cut], masked[0])
            if isinstance(m, SystemMessage):
                prompt, start = m, cut + 1
        texts = [self._head(m) for m in head]
        old = self.streams.pop(stream, None) or {}
        new: dict[int, tuple[Item, Texts]] = {}
        missing: list[tuple[int, int, int]] = []  # (place in texts, index in items, key)
        for i in range(start, n):
            item = items[i]
            # shown masked, in a form of its own (else its masked form is its message: the same key)
            key = id(item) * 2 + 1 if masked[i - cut] and item.has_masked_text() else id(item) * 2
            got = old.get(key)
            if got is None:
                missing.append((len(texts), i, key))
                texts.append(_NONE)
            else:
                new[key] = got
                texts.append(got[1])
        if missing:
            read_back((items[i], masked[i - cut]) for _, i, _ in missing)
            for at, i, key in missing:
                item = items[i]
                made = self.make(_shown(item, masked[i - cut]))
                new[key] = (item, made)
                texts[at] = made
        self.streams[stream] = new
        if len(self.streams) > OPEN_STREAMS:
            self.streams.popitem(last=False)
        return prompt, texts

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


def _shown(item: Item, masked: bool) -> MessageModel:
    """The item's message as the context shows it (a dropped text read back first: `read_back`)."""
    return item.masked_message() if masked else item.message
