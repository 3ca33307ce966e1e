"""The tail watcher: new events after a global-id cursor, as another process commits them.

One indexed query per poll (`id > cursor ORDER BY id LIMIT n`), looping while pages come back
full. A store locked by another process only delays a poll (the reader waits, then the next poll
tries again); any other error is raised to the caller. A row that cannot be decoded is skipped (and reported in
`reader.problems`) without stalling the cursor, unlike zymi's watcher, which retries a bad
batch forever.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from zymi_tui.events.store import EventReader, StoreLocked
from zymi_tui.events.stored import StoredEvent

if TYPE_CHECKING:  # loaded by the first poll: an export read in its own thread (`sqlite_inline`) never polls
    import asyncio

DEFAULT_POLL_S = 0.1
BATCH = 1000


async def tail(
    reader: EventReader,
    after_global_id: int,
    *,
    poll_s: float = DEFAULT_POLL_S,
    batch: int = BATCH,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[list[StoredEvent]]:
    """Yield each non-empty batch of events committed after `after_global_id`, in global order."""
    import asyncio

    cursor = after_global_id
    while stop is None or not stop.is_set():
        while True:
            try:
                page = await reader.read_after(cursor, batch)
            except StoreLocked:
                break  # locked for longer than one read waits: try again at the next poll
            cursor = page.last_global_id
            if page.events:
                yield page.events
            if page.rows_scanned < batch:
                break
        await asyncio.sleep(poll_s)
