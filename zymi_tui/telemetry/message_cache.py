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
    context. A call that only adds messages to the previous call's list takes its values as they are
    (the list compared in one step, identity first); otherwise each message is looked up among the
    previous call's by identity, then compared by value with the one in its place (frozen structs:
    equal messages make equal values), so a message the build makes anew for each call (the prefix,
    the memory block) is not made again, and no call hashes the whole previous list."""

    def __init__(self, make: Callable[[MessageModel], T]) -> None:
        self.make = make
        self.streams: OrderedDict[str, tuple[list[MessageModel], list[T]]] = OrderedDict()

    def values(self, stream: str, messages: Sequence[MessageModel]) -> list[T]:
        messages = list(messages)
        old, old_values = self.streams.pop(stream, ([], []))
        n = len(old)
        if n and len(messages) >= n and messages[:n] == old:
            out = old_values + [self.make(m) for m in messages[n:]] if len(messages) > n else old_values
        else:  # the same objects (most of the list), else an equal one in the same place (made anew by the build)
            same = dict(zip(map(id, old), old_values, strict=True))  # `old` holds them: their ids stay theirs
            out = []
            for i, m in enumerate(messages):
                v = same.get(id(m))
                if v is None:
                    v = old_values[i] if i < n and old[i] == m else self.make(m)
                out.append(v)
        self.streams[stream] = (messages, out)
        if len(self.streams) > OPEN_STREAMS:
            self.streams.popitem(last=False)
        return out

    def forget(self, stream: str) -> None:
        """The step is over: its messages are not needed again."""
        self.streams.pop(stream, None)
