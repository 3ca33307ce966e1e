"""SQLite read in the caller's thread, for a command that replays a store and needs no event loop.

`SqliteReader` reads through an aiosqlite connection (a thread of its own, an event loop's futures). A
command that only reads a store from start to end (`replay`) gains nothing from that thread but pays
for it: `import asyncio` alone (its ssl support) is ~200 M instructions, and each read is a hand-off
between threads. `InlineConnection` is the few awaitables of aiosqlite's connection `SqliteReader` uses,
done at once on a plain `sqlite3` connection: the reader's SQL, checks and decoding are its own, unchanged.
`run_inline` drives a coroutine that awaits nothing but such reads (no loop is needed: none of it ever
waits on a future).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Coroutine, Iterable, Iterator
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class ReadConnection(Protocol):
    """What `SqliteReader` asks of its connection (aiosqlite's, or `InlineConnection`)."""

    @property
    def text_factory(self) -> Callable[[bytes], Any]: ...
    @text_factory.setter
    def text_factory(self, factory: Callable[[bytes], Any]) -> None: ...
    async def execute_fetchall(self, sql: str, parameters: Iterable[Any] | None = None) -> Iterable[Any]: ...
    async def close(self) -> None: ...


class InlineConnection:
    """A read-only `sqlite3` connection with aiosqlite's awaitables, each done before it returns."""

    inline = True  # (`SqliteReader` then reads no page ahead and waits for a lock by sleeping)

    def __init__(self, conn: sqlite3.Connection, database: str, kwargs: dict[str, Any]) -> None:
        self._conn = conn
        self._opened_as = database, kwargs

    @classmethod
    async def connect(cls, database: str, **kwargs: Any) -> InlineConnection:
        return cls(sqlite3.connect(database, **kwargs), database, kwargs)

    @contextlib.contextmanager
    def closed_meanwhile(self) -> Iterator[None]:
        """The connection closed in the context and then opened again as it was (its busy timeout and
        text factory kept): a process forked meanwhile starts with none of this process's SQLite state
        (SQLite's locks are its process's: a child must not inherit a connection, nor its lock counts)."""
        timeout = self._conn.execute("PRAGMA busy_timeout").fetchone()[0]
        factory = self._conn.text_factory
        self._conn.close()
        try:
            yield
        finally:
            database, kwargs = self._opened_as
            self._conn = sqlite3.connect(database, **kwargs)
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout)}")
            self._conn.text_factory = factory

    @property
    def text_factory(self) -> Callable[[bytes], Any]:
        return self._conn.text_factory  # type: ignore[no-any-return]

    @text_factory.setter
    def text_factory(self, factory: Callable[[bytes], Any]) -> None:
        self._conn.text_factory = factory

    async def execute_fetchall(self, sql: str, parameters: Iterable[Any] | None = None) -> list[Any]:
        return self.fetchall_now(sql, () if parameters is None else tuple(parameters))

    def fetchall_now(self, sql: str, parameters: tuple[Any, ...]) -> list[Any]:
        """`execute_fetchall` for code that cannot await (every read here is done before it returns)."""
        return self._conn.execute(sql, parameters).fetchall()

    async def close(self) -> None:
        self._conn.close()


class AwaitedLoop(RuntimeError):
    """A coroutine run inline waited on something only an event loop can bring (a bug: see `run_inline`)."""


def run_inline(coro: Coroutine[Any, Any, T]) -> T:
    """`coro`'s result, run to its end in this thread with no event loop: it must await only coroutines
    that never suspend (an `InlineConnection`'s reads, and code awaiting them)."""
    try:
        waited = coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise AwaitedLoop(f"a command run without an event loop waited on {waited!r}")
