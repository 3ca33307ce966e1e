"""A step-stream event's Layer C item (layer_c.py): its timestamp and message, converted once and shared by
the builders fed that event."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any

from zymi_tui.context.layer_c import Item, kind_of
from zymi_tui.context.masking import message_bytes
from zymi_tui.events.kinds import LlmCallCompleted, ToolCallCompleted, UserMessageReceived
from zymi_tui.events.messages import AssistantMessage, MessageModel, ToolResultMessage
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.timestamps import parse_timestamp_ns


def to_message(event: Any) -> MessageModel | None:
    """The Layer C message of an event kind, or None for kinds zymi skips."""
    if isinstance(event, LlmCallCompleted):
        if event.response_message is not None:
            return event.response_message
        return AssistantMessage(content=event.content_preview, tool_calls=())
    if isinstance(event, ToolCallCompleted):
        return ToolResultMessage(tool_call_id=event.call_id, content=event.result or event.result_preview)
    if isinstance(event, UserMessageReceived):
        return event.content
    return None


@lru_cache(maxsize=4096)
def _utc_seconds(date_time: str) -> int:
    """`YYYY-MM-DDTHH:MM:SS` (UTC) in seconds since the epoch; events of one second share the result."""
    return int(datetime.fromisoformat(date_time + "+00:00").timestamp())


@lru_cache(maxsize=1024)
def fast_ts_ns(text: str) -> int:
    """`parse_timestamp_ns` with a fast path for zymi's `YYYY-MM-DDTHH:MM:SS[.f]Z`; remembered, as an
    event's timestamp is asked for by every replayer it is fed to, and more than once by each."""
    if len(text) >= 20 and text[-1] == "Z" and text[10] == "T" and (len(text) == 20 or text[19] == "."):
        secs = _utc_seconds(text[:19])
        frac = text[20:-1]
        return secs * 1_000_000_000 + (int(frac.ljust(9, "0")[:9]) if frac else 0)
    return parse_timestamp_ns(text)


_SHARED_SIZES = 4096
# one int object for each size under `_SHARED_SIZES`, shared by the items of that size: Python makes a
# new one for each size over 256, 32 bytes an item of a long run (most messages are a few KB at most)
_SIZES = tuple(range(_SHARED_SIZES))


def convert(ev: ReplayEvent) -> tuple[int, Item | None]:
    """An event's timestamp (ns) and its Layer C message (None: a kind zymi skips)."""
    message = to_message(ev.kind)
    ts = fast_ts_ns(ev.timestamp)
    if message is None:
        return ts, None
    n = message_bytes(message)
    return ts, Item(ev.sequence, message, _SIZES[n] if n < _SHARED_SIZES else n, kind_of(message))


class Converted:
    """The Layer C message of each event, converted once (timestamp, message, bytes, masked forms) and
    shared by every builder fed the same events: a what-if re-run of a stream starts from these.
    The masked form of an item depends only on its turn's head, which the re-runs share, so the
    items can be shared too."""

    def __init__(self, *, keep_all: bool = True) -> None:
        """`keep_all=False`: only the last event's (builders fed one event after another, as the
        replayers of one pass over a store under several knob sets are; memory stays flat)."""
        self._by_id: dict[int, tuple[ReplayEvent, int, Item | None]] = {}
        self._keep_all = keep_all

    def get(self, ev: ReplayEvent) -> tuple[int, Item | None]:
        hit = self._by_id.get(id(ev))
        if hit is None or hit[0] is not ev:
            if not self._keep_all:
                self._by_id.clear()
            hit = self._by_id[id(ev)] = (ev, *convert(ev))
        return hit[1], hit[2]
