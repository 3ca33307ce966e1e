"""Layer C of zymi's ContextBuilder: the step stream's events converted to messages once (timestamp,
message, bytes, masked forms: `event_items.py` converts them) and kept in a list with turn boundaries and
running byte sums."""

from __future__ import annotations

import bisect
import copy
import zlib
from array import array
from collections.abc import Iterable, Iterator
from typing import Protocol, SupportsIndex, overload

from zymi_tui.context.masking import (
    CONTENT_PREVIEW_BYTES,
    ELLIPSIS,
    floor_bytes,
    is_tool_error,
    placeholder_of,
)
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    ToolCallInfo,
    ToolResultMessage,
)

ASSISTANT, TOOL, OTHER = 0, 1, 2
HOT_ITEMS = 1024  # a builder's latest items, kept as they came (older tool results are packed: Item.pack)
HOT_BYTES = 32 << 20  # the message bytes a builder is fed before it packs any: a run this small pays nothing
PACK_MIN_BYTES = 256  # a shorter tool result is kept as it is (packing would save little)
DROP_MIN_BYTES = 64  # a shorter message is kept even with a text source (reading it back would cost more)


_CUT = "\x00cut"  # a dropped assistant's masked content: cut again from its text when shown
_DROPPED_CALL = ToolCallInfo(id="", name="", arguments="")  # a dropped result's call: read from its turn's


class TextSource(Protocol):
    """The Layer C messages of one step stream, by sequence."""

    def message(self, seq: int) -> MessageModel:
        """The message of the event at `seq` (read now, unless the last `prefetch` read it)."""
        ...

    def prefetch(self, seqs: Iterable[int]) -> None:
        """Read these sequences' messages in one go (a build about to show them)."""
        ...


class Item:
    """A step-stream event that becomes a Layer C message (converted once).

    An old item's text is not kept as it came (`pack`), once it is `HOT_ITEMS` items old in its builder:
    - with a text source (a replay of a store: `context/texts.py`), the full text is dropped and read
      back from the store when a build shows it in full (a larger window, a forget's dropped list, a
      rebuild without the fresh filter); what masked builds show stays: a tool result's placeholder is
      made from its turn's call, status and size, a long assistant's cut content is kept;
    - without one (the engine's live run, the screens), a tool result's text is kept zlib-packed, after
      the builder was fed `HOT_BYTES` (packing costs ~20 µs a result, paid only by long runs).
    `message` gives the message back, byte for byte. An old item the fresh filter hides is not even kept
    as an object in a replay of a store: its builder keeps its figures (`cold_items.RawItems`)."""

    # (a long run holds hundreds of thousands: each slot is 8 bytes an item. `_aux` is an assistant's
    # masked content or a tool result's call, read directly where the kind is known: no property on
    # the hot paths; a note and `simulated` are class defaults here, set only on a `NotedItem`)
    __slots__ = (
        "_aux", "_error", "_message", "_packed", "bytes", "kind", "masked", "masked_bytes", "masked_for", "seq",
    )  # fmt: skip

    note: str | None = None  # a summary's or a simulated message's reason (a `NotedItem`'s)
    simulated = False  # a message zymi did not write: its size is estimated (a `NotedItem`'s)

    def __init__(self, seq: int, message: MessageModel, nbytes: int, kind: int) -> None:
        self.seq = seq  # (its timestamp is its builder's: an int object per item of a long run was 40 bytes)
        self._message: MessageModel | None = message
        # a packed tool result: (tool_call_id, zlib of its text); or where the dropped text is read back
        self._packed: tuple[str, bytes] | TextSource | None = None
        self.bytes = nbytes
        self.kind = kind
        # the turn head its masked form was made for (-1: none yet, 0: an assistant); the head itself,
        # not its id(): a freed head's id can be a new head's
        self.masked_for: int | Item = -1
        # an assistant's masked content (None: unchanged; `_CUT`: cut again from its text when shown);
        # a tool result's call in its turn (its placeholder's tool and arg; `_DROPPED_CALL`: read back)
        self._aux: str | ToolCallInfo | None = None
        self._error = False  # a tool result's text is an error (its placeholder says so)
        self.masked_bytes = 0
        self.masked: MessageModel | None = None  # the masked message, made when first shown

    def __repr__(self) -> str:
        return f"Item(seq={self.seq}, kind={self.kind}, bytes={self.bytes}, note={self.note!r})"

    def has_masked_text(self) -> bool:
        """Whether `masked_text` is not None (without making a placeholder)."""
        if self.kind == TOOL:
            return self.masked_for not in (-1, 0)
        return self._aux is not None

    @property
    def masked_text(self) -> str | None:
        """The masked content (None: unchanged). A tool result's placeholder is made when asked for, from
        its call, status and size (a long run holds hundreds of thousands, seldom shown)."""
        if self.kind == TOOL and self.masked_for not in (-1, 0):
            return placeholder_of(self._turn_call(), self._error, self.bytes)
        text: str | None = self._aux  # type: ignore[assignment]  # (not a tool result: that is its call)
        if text is _CUT:
            content = self.message.content
            assert content is not None
            return floor_bytes(content, CONTENT_PREVIEW_BYTES) + ELLIPSIS
        return text

    def _turn_call(self) -> ToolCallInfo | None:
        """A tool result's call in its turn (read back from both texts if it was dropped)."""
        call: ToolCallInfo | None = self._aux  # type: ignore[assignment]  # (a tool result: its call)
        if call is _DROPPED_CALL:
            head, msg = self.masked_for, self.message
            assert isinstance(head, Item) and isinstance(msg, ToolResultMessage)
            calls = head.message.tool_calls  # type: ignore[union-attr]
            return next((c for c in calls if c.id == msg.tool_call_id), None)
        return call

    @property
    def message(self) -> MessageModel:
        m = self._message
        if m is None:
            p = self._packed
            if isinstance(p, tuple):
                call_id, data = p
                return ToolResultMessage(tool_call_id=call_id, content=zlib.decompress(data).decode())
            assert p is not None
            return p.message(self.seq)
        return m

    @property
    def text_source(self) -> TextSource | None:
        """Where this item's dropped text is read back from (None: it holds its text)."""
        p = self._packed
        return None if self._message is not None or isinstance(p, tuple) else p

    def pack(self, texts: TextSource | None = None, *, hidden: bool = False) -> None:
        """Keep an old item's text as `Item` says: dropped (`texts`: where to read it back from), or a
        tool result's zlib-packed. Its masked form stays as it is, unless the item is `hidden` from
        the builds made now (by the fresh filter, or compacted away): then nothing of its text is kept
        (its masked form is read back too, should a rare build show it)."""
        m = self._message
        if m is None or self.simulated or self.note is not None:
            return
        if texts is not None and hidden:
            if self.kind == TOOL and self._aux is not None:
                self._aux = _DROPPED_CALL
            elif self.kind == ASSISTANT and self._aux is not None:
                self._aux = _CUT
            self.masked, self._packed, self._message = None, texts, None
            return
        if texts is None:
            if isinstance(m, ToolResultMessage) and self.bytes >= PACK_MIN_BYTES:
                self._packed = (m.tool_call_id, zlib.compress(m.content.encode(), 1))
                self._message = None
            return
        if self.kind == ASSISTANT:
            if self.masked_for != 0 or self._aux is None:
                return  # (its masked form is itself: nothing to drop that a masked build would not show)
            self.masked = self.masked_message()  # the cut content and the calls, what masked builds show
        elif self.bytes < DROP_MIN_BYTES or (self.kind == TOOL and self.masked_for != -1 and self._aux is None):
            return  # (an unknown call's placeholder needs the result's call id: kept)
        else:
            self.masked = None  # a placeholder is made again when shown (primary_arg is remembered)
        self._packed, self._message = texts, None

    def masked_message(self) -> MessageModel:
        if self.masked is None:
            text = self.masked_text
            if text is None:
                m = self.message
                if self.text_source is not None:
                    return m  # (read back: not kept)
                self.masked = m
            else:
                held = self._message
                if self.kind == ASSISTANT:
                    calls = self.message.tool_calls  # type: ignore[union-attr]
                    if held is None:  # (read back: not kept)
                        return AssistantMessage(content=text, tool_calls=calls)
                    self.masked = AssistantMessage(content=text, tool_calls=calls)
                    return self.masked
                p = self._packed
                if isinstance(held, ToolResultMessage):
                    call_id = held.tool_call_id
                elif isinstance(p, tuple):
                    call_id = p[0]
                elif (call := self._aux) is not None:  # (a dropped text: its placeholder is not kept either)
                    call_id = call.id if call is not _DROPPED_CALL else self.message.tool_call_id  # type: ignore[union-attr]
                    return ToolResultMessage(tool_call_id=call_id, content=text)
                else:
                    call_id = self.message.tool_call_id  # type: ignore[union-attr]
                self.masked = ToolResultMessage(tool_call_id=call_id, content=text)
        return self.masked


class NotedItem(Item):
    """An item with a note: a summary, or a message zymi did not write (`simulated`)."""

    __slots__ = ("note", "simulated")

    def __init__(
        self, seq: int, message: MessageModel, nbytes: int, kind: int, note: str, *, simulated: bool = False
    ) -> None:
        super().__init__(seq, message, nbytes, kind)
        self.note = note
        self.simulated = simulated


def read_back(items: Iterable[tuple[Item, bool]]) -> None:
    """Read the dropped texts a build is about to show, of these (item, shown masked) pairs, in one batch
    per text source, so that no message is a read of its own: an item shown in full, or masked when
    nothing of its text was kept (a tool result's, with its turn's assistant: its call)."""
    wanted: dict[int, tuple[TextSource, list[int]]] = {}

    def want(r: Item) -> None:
        src = r.text_source
        if src is not None:
            wanted.setdefault(id(src), (src, []))[1].append(r.seq)

    for r, masked in items:
        if r._message is not None:
            continue
        if not masked or r._aux is _CUT or (r.kind == TOOL and r._aux is None):
            want(r)
        elif r._aux is _DROPPED_CALL:
            want(r)
            if isinstance(r.masked_for, Item):
                want(r.masked_for)
    for src, seqs in wanted.values():
        src.prefetch(seqs)


def kind_of(message: MessageModel) -> int:
    if isinstance(message, AssistantMessage):
        return ASSISTANT
    if isinstance(message, ToolResultMessage):
        return TOOL
    return OTHER


INDEX = "I"  # item indices and running byte sums as 4-byte machine integers (a tail holds a few per item)


def widened(values: array[int], more: list[int]) -> array[int]:
    """`values` and then `more` as 8-byte integers (a value past what `values`' type holds)."""
    out = array("q", values)
    out.extend(more)
    return out


def _extended(values: array[int], more: list[int]) -> array[int]:
    """`values` and then `more` (in place, unless one of them needs `widened`)."""
    try:
        values += array(values.typecode, more)
    except OverflowError:
        return widened(values, more)
    return values


class ItemList(Protocol):
    """What a tail's items are: a list, or a view of its builder's items (`cold_items.RawView`)."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, i: SupportsIndex) -> Item: ...
    @overload
    def __getitem__(self, i: slice) -> list[Item]: ...
    def __iter__(self) -> Iterator[Item]: ...
    def append(self, item: Item, /) -> None: ...
    def extend(self, items: Iterable[Item], /) -> None: ...
    def copy(self) -> ItemList: ...


class Tail:
    """Layer C before forget/masking, with turn boundaries and running byte sums."""

    __slots__ = ("cum_full", "cum_masked", "head", "hidden_by_fresh", "items", "summaries", "turn_ends", "turn_starts")

    def __init__(self) -> None:
        self.items: ItemList = []  # (a view: its builder's items, old ones kept as columns)
        # machine integers (not a list of int objects): a long run has hundreds of thousands. Item
        # indices in 4 bytes; the running sums too, widened to 8 once one passes 4 GB (`widened`)
        self.turn_starts = array(INDEX)
        self.turn_ends = array(INDEX)
        self.cum_full = array(INDEX, [0])
        self.cum_masked = array(INDEX, [0])
        self.head: Item | None = None  # the assistant of the open turn
        self.summaries = 0  # `[compacted history]` messages among the items
        self.hidden_by_fresh = 0  # stored items older than the fresh cutoff

    def append(self, raw: Item) -> None:
        n = len(self.cum_full) - 1  # (the items': a view's length is a call)
        masked_bytes = raw.bytes
        if raw.kind == ASSISTANT:
            self.turn_starts.append(n)
            self.turn_ends.append(n + 1)
            self.head = raw
            if raw.masked_for != 0:
                content = raw.message.content
                if raw.simulated:  # no real text: only its estimated size is cut
                    raw._aux, raw.masked_bytes = (
                        None,
                        min(raw.bytes, CONTENT_PREVIEW_BYTES + len(ELLIPSIS.encode())),
                    )
                elif content is not None and raw.bytes > CONTENT_PREVIEW_BYTES:
                    cut = floor_bytes(content, CONTENT_PREVIEW_BYTES) + ELLIPSIS
                    raw._aux, raw.masked_bytes = cut, len(cut.encode())
                else:
                    raw._aux, raw.masked_bytes = None, raw.bytes
                raw.masked, raw.masked_for = None, 0
            masked_bytes = raw.masked_bytes
        elif raw.kind == TOOL and self.head is not None:
            self.turn_ends[-1] = n + 1
            if raw.masked_for is not self.head:
                if raw.masked_for != -1:  # masked for another turn already: a build made then may
                    raw = copy.copy(raw)  # still show that form (its messages are made when asked for)
                head = self.head
                msg = raw.message
                assert isinstance(msg, ToolResultMessage) and isinstance(head.message, AssistantMessage)
                call = next((c for c in head.message.tool_calls if c.id == msg.tool_call_id), None)
                raw._aux, raw._error = call, is_tool_error(msg.content)
                raw.masked_bytes = len(placeholder_of(call, raw._error, raw.bytes).encode())
                raw.masked, raw.masked_for = None, head
            masked_bytes = raw.masked_bytes
        else:
            self.head = None
            if raw.note is not None and raw.kind == OTHER:
                self.summaries += 1
        self.items.append(raw)
        full, masked = self.cum_full[-1] + raw.bytes, self.cum_masked[-1] + masked_bytes
        try:
            self.cum_full.append(full)
        except OverflowError:
            self.cum_full = widened(self.cum_full, [full])
        try:
            self.cum_masked.append(masked)
        except OverflowError:
            self.cum_masked = widened(self.cum_masked, [masked])

    def extend(self, base: Tail, start: int, end: int) -> None:
        """Append `base`'s items [start, end) as `append` does one by one, from `base`'s running sums
        and turns, where `base` appended the same items (the same objects: their masked forms are
        made already) in the same turns: true from the first item that is not a tool result (a tool
        result joins this tail's open turn, which may not be the one it joined in `base`)."""
        items = base.items
        while start < end and items[start].kind == TOOL:
            self.append(items[start])
            start += 1
        if start >= end:
            return
        off = len(self.items) - start
        full, masked = self.cum_full[-1] - base.cum_full[start], self.cum_masked[-1] - base.cum_masked[start]
        self.items.extend(items[start:end])
        self.cum_full = _extended(self.cum_full, [v + full for v in base.cum_full[start + 1 : end + 1]])
        self.cum_masked = _extended(self.cum_masked, [v + masked for v in base.cum_masked[start + 1 : end + 1]])
        lo = bisect.bisect_left(base.turn_starts, start)
        hi = bisect.bisect_left(base.turn_starts, end)
        self.turn_starts.extend(t + off for t in base.turn_starts[lo:hi])
        self.turn_ends.extend(min(t, end) + off for t in base.turn_ends[lo:hi])
        # the open turn's assistant: the last turn's, if its items run to the end (else an item that is
        # not part of a turn came after it, or no turn started: `append` left None)
        self.head = items[base.turn_starts[hi - 1]] if hi > lo and min(base.turn_ends[hi - 1], end) == end else None
        self.summaries += sum(1 for r in items[start:end] if r.kind == OTHER and r.note is not None)

    def clone(self) -> Tail:
        other = copy.copy(self)
        other.items, other.turn_starts, other.turn_ends = self.items.copy(), self.turn_starts[:], self.turn_ends[:]
        other.cum_full, other.cum_masked = self.cum_full[:], self.cum_masked[:]
        return other

    def in_turn(self, index: int) -> bool:
        """Whether item `index` belongs to a turn (so has a masked form)."""
        t = bisect.bisect_right(self.turn_starts, index) - 1
        return t >= 0 and index < self.turn_ends[t]
