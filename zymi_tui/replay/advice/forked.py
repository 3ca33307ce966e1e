"""A piece of `advise`'s work done in a forked child on the store opened again (`Forked`): one half of pass
two (`pass_two.halves`), or the tokens per byte pass one needs from a million events (`pass_one`).

Only a process of its own forks (the command line's, `split`): a dashboard runs threads. The child opens
the store again for itself (a SQLite connection is not carried across a fork), has SIGINT blocked (a
Ctrl-C is the parent's, which then kills it), sends its outcome (or its error) pickled to a pipe, and ends
with `os._exit`, running no exit handler."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import pickle
import select
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.replay.sweep_pool import sigint_blocked


class Forked:
    """`work` of the store at `location` (on a reader of its own) in a forked child; its outcome read with
    `result` (what `what` names, in the error of a child that sent none)."""

    def __init__(self, location: StoreLocation, work: Callable[[EventReader], Awaitable[Any]], what: str) -> None:
        self.what = what
        self.source, sink = os.pipe()
        gc.freeze()  # the child's collections leave the objects it was born with alone (their pages not copied)
        with sigint_blocked():
            self.pid = os.fork()
        if self.pid == 0:
            try:
                os.close(self.source)
                asyncio.events._set_running_loop(None)  # the parent's loop, running when it forked, is not ours
                outcome: tuple[bool, object]
                try:
                    outcome = (True, asyncio.run(_on_own_reader(location, work)))
                except BaseException as e:  # (the parent raises it)
                    outcome = (False, e)
                with os.fdopen(sink, "wb") as pipe:
                    pickle.dump(outcome, pipe)
            finally:
                os._exit(0)
        gc.unfreeze()
        os.close(sink)
        self.running, self.sent = True, False

    def ready(self) -> bool:
        """Whether the child has begun sending its outcome (`result` then waits no longer than that takes)."""
        return bool(select.select([self.source], [], [], 0)[0])

    def result(self) -> Any:
        """The child's outcome, waited for (its error raised)."""
        with os.fdopen(os.dup(self.source), "rb") as pipe:
            try:
                ok, value = pickle.load(pipe)
            except (EOFError, pickle.UnpicklingError):
                raise RuntimeError(f"the process {self.what} ended without its figures") from None
        self.sent = True
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        """The child waited for as it exits once it has sent its outcome, else killed first."""
        if not self.running:
            return
        self.running = False
        if not self.sent:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.source)


async def _on_own_reader(location: StoreLocation, work: Callable[[EventReader], Awaitable[Any]]) -> Any:
    reader = await open_reader(location)
    try:
        return await work(reader)
    finally:
        await reader.close()
