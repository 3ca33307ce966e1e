"""Waiting on an event, not on the clock.

Every wait in the suite ends as soon as what it waits for happens (a line on stdout, a row in the
store, a screen painted); `LIMIT` only turns a hang into a failure. It is generous on purpose: on a
machine shared with other CPU-heavy work a process can take tens of seconds to start, and a wait that
ends on its event costs nothing more when the machine is idle.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

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


def announced_port(stream: IO[str], marker: str) -> tuple[int, str]:
    """Read a server's output line by line up to the first line holding `marker` and an `http://` URL
    with a port (how `serve` and `serve-web` started on port 0 say which port the OS gave them): that
    port, and the text read. A server that exits first fails the test with what it printed."""
    seen = ""
    while True:
        line = stream.readline()
        assert line, f"the server exited before printing `{marker}`:\n{seen}"
        seen += line
        found = _URL_PORT.search(line)
        if marker in line and found:
            return int(found.group(1)), seen


_URL_PORT = re.compile(r"http://(?:\[[^\]]*\]|[^/:\s]+):(\d+)")


@contextmanager
def bounded(proc: subprocess.Popen[Any], limit: float = LIMIT) -> Iterator[subprocess.Popen[Any]]:
    """`proc` for the block: killed if still alive `limit` seconds on (so a read on its pipes ends, and the
    test fails instead of hanging), and when the block ends, however it ends (a failed assertion too)."""
    timer = threading.Timer(limit, proc.kill)
    timer.daemon = True
    timer.start()
    try:
        yield proc
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
