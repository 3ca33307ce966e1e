"""Write transactions that run to their end even when their caller is cancelled (Ctrl-C).

A cancellation that lands between `BEGIN` and `COMMIT` would otherwise leave the connection inside
a transaction nobody finishes (the next append then fails with "cannot start a transaction within
a transaction"), or roll back after a `COMMIT` that already ran. Each transaction runs as its own
task: the caller's cancellation stops the caller's wait, never the transaction, and the writer's
next append (say, the one sealing the interrupted run) comes after it. `close` waits for them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def _consume(task: asyncio.Task[Any]) -> None:
    """Read a finished transaction's error, so a caller that stopped waiting leaves no warning behind."""
    if not task.cancelled():
        task.exception()


class Transactions:
    """The write transactions of one writer that are still running."""

    def __init__(self) -> None:
        self._running: set[asyncio.Task[Any]] = set()

    async def run(self, transaction: Coroutine[Any, Any, T]) -> T:
        task = asyncio.ensure_future(transaction)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        task.add_done_callback(_consume)
        return await asyncio.shield(task)

    def idle(self) -> bool:
        """No transaction is running or waiting to run."""
        return not self._running

    async def finish(self) -> None:
        """Wait until every transaction begun so far has committed or rolled back."""
        while self._running:
            await asyncio.wait(set(self._running))
