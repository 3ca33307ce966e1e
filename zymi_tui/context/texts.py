"""Where a builder gets back the texts of the Layer C messages it no longer holds.

A long run's builder keeps every item (zymi's rules can show any of them again: a rebuild ignores the
fresh filter, a forget's dropped list shows forgotten items in full, a larger window unmasks), but a
replay of a store does not need to keep their texts: an old item keeps its figures (sequence, sizes,
kind, its turn's call for its placeholder) and its message is read back from the store, by the step
stream's sequence, when a build shows it (`Item.drop_text`). Without a text source (the engine's live
run, the screens that hold the texts already) an item keeps its text, old tool results zlib-packed.

A text source is read from the builder's synchronous API (a build's messages are made when first
asked for, by code that does not await), so the store is read blocking, on a connection of its own
(`events.store.BlockingRows`), a build's items in one batch (`prefetch`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from zymi_tui.context.event_items import to_message
from zymi_tui.context.layer_c import TextSource
from zymi_tui.events.kind_json import type_name_at
from zymi_tui.events.replay_view import decode_replay_row
from zymi_tui.events.store import RawRow

if TYPE_CHECKING:
    from zymi_tui.events.messages import MessageModel

KEPT = 4096  # messages read singly that are kept until the next batch (a batch keeps only its own)
BATCH = 500  # sequences asked for in one read


class TextsGone(RuntimeError):
    """The store no longer holds an event whose text a build shows (it was read before)."""


class StoreTexts(TextSource):
    """One step stream's texts read back from its store: `rows(stream, sequences)` reads the rows."""

    __slots__ = ("_kept", "_rows", "stream_id")

    def __init__(self, rows: Callable[[str, Sequence[int]], list[RawRow]], stream_id: str) -> None:
        self._rows = rows
        self.stream_id = stream_id
        self._kept: dict[int, MessageModel] = {}

    def message(self, seq: int) -> MessageModel:
        m = self._kept.get(seq)
        if m is None:
            if len(self._kept) >= KEPT:
                self._kept.clear()
            self._read([seq])
            m = self._kept.get(seq)
            if m is None:
                raise TextsGone(f"{self.stream_id} seq {seq}: the store no longer holds this event")
        return m

    def prefetch(self, seqs: Iterable[int]) -> None:
        wanted = sorted(set(seqs))
        if wanted:
            self._kept = {}
            self._read(wanted)

    def _read(self, seqs: list[int]) -> None:
        for at in range(0, len(seqs), BATCH):
            for gid, _, seq, data in self._rows(self.stream_id, seqs[at : at + BATCH]):
                message = to_message(decode_replay_row(type_name_at(data), gid, seq, data).kind)
                if message is not None:
                    self._kept[seq] = message
