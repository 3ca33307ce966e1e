"""The one way a screen's worker thread reads the store: its own event loop and its own reader.

Textual workers run in threads so decoding never blocks the UI; a thread cannot share the UI loop's
reader, so each job opens one, runs, and closes it. Rows the reader skipped are handed to
`skipped` (the dashboard reports them); errors pass through (a `UserError` is shown by the screen
that catches it, or by the app's handler).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.events.stored import BadRow

T = TypeVar("T")


def with_reader(
    store: StoreLocation,
    job: Callable[[EventReader], Awaitable[T]],
    *,
    skipped: Callable[[list[BadRow]], object] | None = None,
) -> T:
    """Run `job(reader)` to its end in this (worker) thread, on a reader of its own."""

    async def run() -> T:
        reader = await open_reader(store)
        try:
            return await job(reader)
        finally:
            if skipped is not None and reader.problems:
                skipped(list(reader.problems))
            await reader.close()

    return asyncio.run(run())
