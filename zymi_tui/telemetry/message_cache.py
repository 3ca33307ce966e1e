"""What an export makes of each message of a call's context, kept for the step's next call: a step's
calls resend the messages of the call before, so each message's figures or text are made once.

Only the messages of the last call of the `OPEN_STREAMS` latest step streams are held (and a step's
are dropped when it ends), so memory follows the contexts being built, not the store."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from zymi_tui.events.messages import MessageModel

T = TypeVar("T")
OPEN_STREAMS = 64  # step streams whose messages are kept (a store of many runs interleaves a few)


class MessageCache(Generic[T]):
    """`make(message)` for the messages of each call, made once while the message stays in its step's
    context (messages are known by identity: the replay hands out the same object call after call)."""

    def __init__(self, make: Callable[[MessageModel], T]) -> None:
        self.make = make
        self.streams: OrderedDict[str, dict[int, tuple[MessageModel, T]]] = OrderedDict()

    def values(self, stream: str, messages: Sequence[MessageModel]) -> list[T]:
        old = self.streams.pop(stream, {})
        new: dict[int, tuple[MessageModel, T]] = {}
        out: list[T] = []
        for m in messages:
            hit = new.get(id(m)) or old.get(id(m))
            if hit is None or hit[0] is not m:  # an id is reused once its object is gone
                hit = (m, self.make(m))
            new[id(m)] = hit
            out.append(hit[1])
        self.streams[stream] = new
        if len(self.streams) > OPEN_STREAMS:
            self.streams.popitem(last=False)
        return out

    def forget(self, stream: str) -> None:
        """The step is over: its messages are not needed again."""
        self.streams.pop(stream, None)
