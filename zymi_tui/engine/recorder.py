"""Where the engine writes: one store writer, shared by every run of the process, plus in-process listeners."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from zymi_tui.events.kinds import Event, EventData
from zymi_tui.events.store import EventWriter
from zymi_tui.events.stored import StoredEvent

Listener = Callable[[StoredEvent], None]


class Recorder:
    """Appends events exactly as zymi does (the writer serialises appends) and tells listeners."""

    def __init__(self, writer: EventWriter) -> None:
        self.writer = writer
        self.listeners: list[Listener] = []
        # ids of the events being appended: committed (and so visible to a reader of the store)
        # before the listeners hear of them
        self.in_flight: set[str] = set()

    async def emit(self, stream_id: str, kind: EventData, source: str, correlation_id: str | None) -> StoredEvent:
        """Append one event and tell the listeners. An append under way when the caller is cancelled
        (Ctrl-C) still commits, so the listeners still hear it before the cancellation goes on."""
        event = Event.new(stream_id, kind, source, correlation_id)
        stored = self.writer.append_now(event)
        if stored is not None:  # committed and told with nothing in between: not in flight
            self._tell(stored)
            return stored
        self.in_flight.add(event.id)
        append = asyncio.ensure_future(self.writer.append(event))
        try:
            stored = await asyncio.shield(append)
        except asyncio.CancelledError:
            await asyncio.wait({append})
            if not append.cancelled() and append.exception() is None:
                self._tell(append.result())
            raise
        finally:
            self.in_flight.discard(event.id)
        self._tell(stored)
        return stored

    def _tell(self, stored: StoredEvent) -> None:
        for listener in list(self.listeners):
            listener(stored)

    async def checkpoint(self) -> None:
        await self.writer.checkpoint()
