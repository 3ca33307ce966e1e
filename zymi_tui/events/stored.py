"""What a store's reader hands out: events with their row id, and the rows it could not read.

A reader that only lists runs, passes rows through or checks the hash chain imports this module, the
backends and `row_envelope`, never the whole-event reader: `envelope` (and the decoder of every kind)
is loaded the first time a reader decodes whole events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from zymi_tui.events.kinds import Event


class StoredEvent(msgspec.Struct, frozen=True):
    """An event as read from a store, with its global id (the `id` column) and raw text."""

    global_id: int
    event: Event
    data: str


class BadRow(msgspec.Struct, frozen=True):
    """A row that could not be read. Reported with its row id, never fatal."""

    global_id: int
    stream_id: str
    sequence: int
    error: str

    def describe(self) -> str:
        return f"row {self.global_id} (stream {self.stream_id} seq {self.sequence}): {self.error}"


class RowDecoder:
    """What both backends' readers share: decoding rows, each unreadable one reported once in `problems`."""

    problems: list[BadRow]
    _seen_bad: set[int]

    def _bad(self, gid: int, stream_id: str, seq: Any, error: str) -> None:
        if gid not in self._seen_bad:
            self._seen_bad.add(gid)
            self.problems.append(BadRow(gid, stream_id, seq, error))

    def _decode_rows(self, rows: Iterable[tuple[int, str, int, str]]) -> list[StoredEvent]:
        rows = list(rows)
        if not rows:  # a tail's empty poll loads nothing (the dashboard polls before its first frame settles)
            return []
        # imported here, not at the top: the whole-event reader is loaded only by a reader that
        # decodes whole events (see the module docstring)
        from zymi_tui.events.envelope import EventDecodeError, decode_event

        out: list[StoredEvent] = []
        for gid, stream_id, seq, data in rows:
            try:
                out.append(StoredEvent(gid, decode_event(data, seq), data))
            except EventDecodeError as e:
                self._bad(gid, stream_id, seq, str(e))
        return out
