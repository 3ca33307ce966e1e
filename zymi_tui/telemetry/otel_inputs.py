"""A call's `gen_ai.input.messages` made from where its rebuilt context's messages come from (its
`Shape`: Layer A, the memory snapshot, Layer C items [cut, n) of the step's tail, some shown masked),
without making the context's entries: each Layer C item's text is made once while the item is shown
the same way, and reused by the step's next calls, which resend it (the window of items a step's
calls show, moved forward: telemetry/shown_items.py)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from zymi_tui.context.layer_c import Item, read_back
from zymi_tui.context.masking import memory_block
from zymi_tui.context.rendered import Shape
from zymi_tui.context.splice import prefix_entries
from zymi_tui.events.messages import MessageModel, SystemMessage
from zymi_tui.telemetry.shown_items import HEADS_KEPT, ShownItems, Tally, Window, shown, shown_masked_at

Texts = tuple[str, bytes]  # `otel_content.message_texts`: a message's JSON and that JSON escaped, in UTF-8


def shape_length(shape: Shape) -> int:
    """How many messages the context of `shape` holds (`len(rendered.entries)`, without making them)."""
    return len(prefix_entries(shape.prefix)) + (1 if shape.memory else 0) + shape.n - shape.cut


class ShownInputs:
    """`make(message)` for the messages of each call's context (`inputs`), made once per item shown
    (`ShownItems`: a call whose Layer C is a forward move of its step's previous call's looks only at
    the items that left, entered, or went masked)."""

    def __init__(
        self, make: Callable[[MessageModel], Any], tally: Callable[[], Tally[Any]] | None = None, *,
        reads_back: bool = True,
    ) -> None:  # fmt: skip
        """`tally`, `reads_back=False`: see `ShownItems` (an item's dropped text is then read back by
        `_item_texts`, if it must be)."""
        self.make = make
        self.items: ShownItems[Any] = ShownItems(self._item_texts, tally, reads_back=reads_back)
        self.stream = ""  # the step stream of the call being made
        self.head_count = 0  # the messages of Layer A and the memory among its inputs
        self.streams: OrderedDict[str, Window[Any]] = self.items.streams  # step stream -> its last window
        self.heads: dict[MessageModel, Any] = {}

    def _item_texts(self, item: Item, masked: bool) -> Any:
        return self.make(shown(item, masked))

    def inputs(
        self, stream: str, shape: Shape, *, drop_prefix: bool, prompt_first: bool
    ) -> tuple[SystemMessage | None, list[Any]]:
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
            item, masked = tail.items[cut], shown_masked_at(tail, cut, mask_end)
            read_back([(item, masked)])
            m = shown(item, masked)
            if isinstance(m, SystemMessage):
                prompt, start = m, cut + 1
        texts = [self._head(m) for m in head]
        self.stream, self.head_count = stream, len(texts)
        texts += self.items.window(stream, tail, mask_end, n, start).values
        return prompt, texts

    def _head(self, m: MessageModel) -> Any:
        got = self.heads.get(m)
        if got is None:
            if len(self.heads) >= HEADS_KEPT:
                self.heads.clear()
            got = self.heads[m] = self.make(m)
        return got

    def forget(self, stream: str) -> None:
        """The step is over: its items are not needed again."""
        self.items.forget(stream)
