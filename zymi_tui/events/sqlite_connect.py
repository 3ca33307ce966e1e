"""Opening an aiosqlite connection, and stopping every one a command left open.

Each aiosqlite connection runs its queries on a thread of its own, and that thread is not a daemon: the
interpreter's exit waits for it until the connection is closed. A task cancelled while it opens or closes a
connection can leave one open; the dashboard's end does that (Textual cancels its workers, then
`asyncio.run` cancels every task left, including a worker already closing its reader), and ctrl+q then
hung the process on one connection in about one quit of four on a loaded machine.
`stop_left_connections` closes what is left once the command's event loop is over.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: a reader in this thread (`sqlite_inline`) loads neither
    import aiosqlite

# every connection opened here that is still referenced (a lost one left in a reference cycle included)
_OPENED: weakref.WeakSet[aiosqlite.Connection] = weakref.WeakSet()


async def _open(database: str, **kwargs: Any) -> aiosqlite.Connection:
    import aiosqlite

    conn = aiosqlite.connect(database, **kwargs)  # not started until awaited
    _OPENED.add(conn)
    return await conn


async def connect(database: str, **kwargs: Any) -> aiosqlite.Connection:
    """`aiosqlite.connect`; if the caller is cancelled meanwhile (Ctrl-C), the connection is still
    waited for and closed: its thread, left working after the event loop closed, prints a traceback."""
    import asyncio

    task = asyncio.ensure_future(_open(database, **kwargs))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait({task})
        if not task.cancelled() and task.exception() is None:
            await task.result().close()
        raise


def stop_left_connections() -> None:
    """Close every connection still open and end its thread (after the event loop is over: nothing awaits
    them any more). The thread ends once its current query, if any, returns."""
    if not _OPENED:
        return
    import warnings

    with warnings.catch_warnings():  # `stop` asks for an event loop there is none of (it then needs none)
        warnings.simplefilter("ignore", DeprecationWarning)
        for conn in list(_OPENED):
            conn.stop()
