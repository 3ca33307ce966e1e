"""Waiting on an event, not on the clock.

Every wait in the suite ends as soon as what it waits for happens (a line on stdout, a row in the
store, a screen painted); `LIMIT` only turns a hang into a failure. It is generous on purpose: on a
machine shared with other CPU-heavy work a process can take tens of seconds to start, and a wait that
ends on its event costs nothing more when the machine is idle.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

LIMIT = float(os.environ.get("ZYMI_TUI_TEST_WAIT_S", "300"))


def wait_until(condition: Callable[[], object], what: str, *, limit: float = LIMIT, poll: float = 0.05) -> None:
    """Poll `condition` until it holds; fail naming `what` after `limit` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"waited {limit:.0f} s for {what}"
        time.sleep(poll)


async def pilot_until(
    pilot: Any, condition: Callable[[], object], what: str = "the app", *, limit: float = LIMIT
) -> None:
    """`wait_until` inside a Pilot test: the app keeps running between polls."""
    deadline = asyncio.get_running_loop().time() + limit
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"waited {limit:.0f} s for {what}"
        await pilot.pause(0.05)


async def workers_idle(pilot: Any, what: str = "the app's workers", *, limit: float = LIMIT) -> None:
    """Until no worker is pending or running and what they posted has been handled.

    Unlike `app.workers.wait_for_complete()` this does not raise `WorkerCancelled` when a screen
    replaces a running exclusive worker by a newer one (as every edit does), and it catches a worker
    started by a message a finished one posted. A worker that failed fails the test.
    """
    app = pilot.app

    def idle() -> bool:
        workers = list(app.workers)
        failed = [w for w in workers if w.state.name == "ERROR"]
        assert not failed, f"worker failed: {failed[0].name}: {failed[0].error!r}"
        return all(w.is_finished for w in workers)

    while True:
        await pilot_until(pilot, idle, what, limit=limit)
        await pilot.pause()  # the messages they posted are handled; a handler may start another worker
        if idle():
            return
