"""The hash-chain side of the SQLite reader (sqlite_read.py): a stream's rows to hash, the whole-store scan
in threads with connections of their own (beside SQLite's own check), and the stream heads.

`ChainReads` is a part of `SqliteReader`: it uses the reader's connection (`_fetch`), its URI and what `open`
found of the schema.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from zymi_tui.events.chain_heads import Heads
from zymi_tui.events.hashchain import ChainRow, ChainScan, column_text
from zymi_tui.events.sqlite_check import TEXT_ANY, pragma_check, scan_store
from zymi_tui.events.sqlite_schema import LOCK_WAIT_S, explain_sqlite_error

if TYPE_CHECKING:
    from zymi_tui.events.chain_split import LaterPart

HEADS_CACHE_KIB = 64  # the page cache `_read_heads` reads the heads through


def _chain_row(gid: int, event_id: Any, seq: Any, data: Any, prev: Any, digest: Any) -> ChainRow:
    """A row to hash: a BLOB is hashed as the bytes it holds (undecodable text goes back to its bytes)."""
    if type(data) is str and type(event_id) is str and type(prev) is str and type(digest) is str:
        return ChainRow(gid, event_id, seq, data, prev, digest)
    return ChainRow(gid, column_text(event_id), seq, column_text(data), column_text(prev), column_text(digest))


class ChainReads:
    """The reads `verify` and the dashboard's check make (a part of `SqliteReader`)."""

    label: str
    _uri: str
    _has_hash: bool
    _has_heads: bool

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError  # (`SqliteReader._fetch`)

    async def chain_rows(self, stream_id: str) -> list[ChainRow]:
        cols = "prev_hash, hash" if self._has_hash else "'', ''"
        rows = await self._fetch(
            f"SELECT id, event_id, sequence, data, {cols} FROM events WHERE stream_id = CAST(? AS TEXT) "
            "ORDER BY sequence",
            (stream_id,),
        )
        return [_chain_row(*r) for r in rows]

    async def scan_chains(self, heads: Mapping[str, tuple[int, str]], *, thorough: bool = False) -> ChainScan:
        """One pass over the table in global order, in a thread with a connection of its own: each row
        is hashed as soon as it is read, while its bytes are fresh in memory (pages of rows held for
        another thread to hash cost as much again as the hashing). A large table's later ids are scanned
        by a forked child (`chain_split`), forked first: before the threads start. SQLite's own check runs
        beside the scan, in another thread (see `sqlite_check`). A cancelled caller stops them all soon."""
        import asyncio

        stop = threading.Event()
        later = self._later_part(heads)
        try:
            scan, found = await asyncio.gather(
                asyncio.to_thread(self._scan_chains, heads, stop, later),
                asyncio.to_thread(self._pragma_check, stop, thorough),
            )
        finally:
            stop.set()
            if later is not None:
                later.stop()
        scan.damage[:0] = found
        return scan

    def _later_part(self, heads: Mapping[str, tuple[int, str]]) -> LaterPart | None:
        """The later part of a large table, forked now (`chain_split.later_part`), of the ids up to the last
        one now (read after the heads)."""
        from zymi_tui.events.chain_split import later_part  # here: a reader that checks no chain

        conn = self._check_connection()
        try:
            upto = conn.execute("SELECT max(id) FROM events").fetchone()[0]
        except sqlite3.Error as e:
            raise explain_sqlite_error(self.label, e) from None
        finally:
            conn.close()
        return later_part(self._uri, heads, upto, self._has_hash) if type(upto) is int else None

    def _scan_chains(
        self, heads: Mapping[str, tuple[int, str]], stop: threading.Event, later: LaterPart | None
    ) -> ChainScan:
        from zymi_tui.events.chain_split import scan_in_two

        conn = self._check_connection()
        try:
            if later is None:
                return scan_store(conn, heads, stop, has_hash=self._has_hash)
            return scan_in_two(conn, later, heads, stop, has_hash=self._has_hash)
        except sqlite3.Error as e:
            raise explain_sqlite_error(self.label, e) from None
        finally:
            conn.close()

    def _pragma_check(self, stop: threading.Event, thorough: bool) -> list[str]:
        conn = self._check_connection()
        try:
            return pragma_check(conn, stop, thorough=thorough)
        except sqlite3.Error as e:
            raise explain_sqlite_error(self.label, e) from None
        finally:
            conn.close()

    def _check_connection(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._uri, uri=True, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={int(LOCK_WAIT_S * 1000)}")
        return conn

    async def heads_stamp(self) -> tuple[int, int] | None:
        if not self._has_heads:
            return (0, 0)
        rows = await self._fetch("SELECT count(*), total(last_sequence) FROM stream_heads")
        return int(rows[0][0]), int(rows[0][1])

    async def stream_heads(self) -> Heads:
        if not self._has_heads:
            return Heads()
        # (read in this thread: what a thread of its own allocates stays in its malloc arena, ~4 MB at a million)
        return self._read_heads()

    def _read_heads(self) -> Heads:
        """The heads packed as they are read, a row at a time (never the rows all fetched: 3.6 MB of tuples for
        a million-event store's 50,000 heads), into arrays made at their size."""
        conn = self._check_connection()
        conn.text_factory = TEXT_ANY  # (a stream id that is not UTF-8 reads as its bytes kept as surrogates)
        try:
            # a page cache of a few pages for this one pass (SQLite's default, 2 MB, fills with a million-event
            # store's 6 MB of heads and, freed under what the heads then hold, stays resident through the check)
            conn.execute(f"PRAGMA cache_size=-{HEADS_CACHE_KIB}")
            conn.execute("BEGIN")  # (one snapshot: the count is that of the rows read)
            count = conn.execute("SELECT count(*) FROM stream_heads").fetchone()[0]
            cursor = conn.execute("SELECT stream_id, last_sequence, last_hash FROM stream_heads")
            return Heads(((column_text(s), seq, column_text(h)) for s, seq, h in cursor), size=count)
        except sqlite3.Error as e:
            raise explain_sqlite_error(self.label, e) from None
        finally:
            conn.close()
