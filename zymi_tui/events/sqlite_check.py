"""The whole-store check of a SQLite store: every chain walked in one scan of the table, and what
SQLite itself finds wrong below the rows.

A store corrupted by writers that lost their locks (issue 29) can hold chains that all link while
its b-trees do not: rows missing from an index (zymi reads a stream through the (stream_id,
sequence) index, so it sees a truncated chain where our scan of the table saw a whole one), rowids
out of order, pages that no longer parse. `verify` therefore adds, to the chain walk:

- `PRAGMA quick_check`: every b-tree page, cell, record and NOT NULL constraint (0.7 s on a 1M-event
  store, run on its own connection beside the scan). `PRAGMA integrity_check` also compares every
  index entry with its row, at 4.0 s on that store (the whole chain walk takes 2.9 s): it runs on
  `verify --thorough` only, and the cheaper comparison below covers the damage seen;
- each index of `events` compared with the rows the scan read from the table, in the same read
  transaction: its entry count, and for the (stream_id, sequence) index zymi reads streams by, the
  sum of the rowids it points at (0.1 s in all on 1M). On a mismatch the rows missing from the
  index, or the entries that point at no row, are named. On the four stores that 4 writers
  corrupted before the fix, this found each one; `quick_check` passed one of them.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Mapping
from operator import itemgetter

from zymi_tui.events.hashchain import ChainScan

# Once a store shows TEXT that is not valid UTF-8, its reader decodes TEXT with `surrogateescape`:
# the value still reads (bad bytes kept as lone surrogates, encoded back to the same bytes), so one
# bad row is reported and skipped instead of failing the whole page. Clean stores keep SQLite's
# own decoding, which is faster.
TEXT_ANY = functools.partial(str, encoding="utf-8", errors="surrogateescape")
NOT_UTF8 = "Could not decode to UTF-8"
SCAN_CHUNK = 500  # rows the scan reads between looks at whether it was cancelled
CHECK_LINES = 10  # SQLite's own messages kept (quick_check stops after this many)
NAMED_ROWS = 5  # rows named for an index that disagrees with its table
STREAM_INDEX = "idx_events_stream_seq"  # zymi's (stream_id, sequence) index


def pragma_check(conn: sqlite3.Connection, stop: threading.Event, *, thorough: bool) -> list[str]:
    """SQLite's `quick_check` (`integrity_check` when `thorough`), each finding as a line; stops
    early (and finds nothing) once `stop` is set."""
    pragma = "integrity_check" if thorough else "quick_check"
    conn.set_progress_handler(stop.is_set, 10_000)
    try:
        found = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}({CHECK_LINES})")]
    except sqlite3.OperationalError as e:
        if stop.is_set() and "interrupt" in str(e):
            return []
        raise
    except sqlite3.DatabaseError as e:
        return [f"SQLite's {pragma} could not finish: {e}"]
    finally:
        conn.set_progress_handler(None, 0)
    if found == ["ok"]:
        return []
    lines = [line for text in found for line in text.splitlines() if line and not line.startswith("*** in database")]
    return [f"SQLite's {pragma}: {line}" for line in lines[:CHECK_LINES]]


def _indexes(conn: sqlite3.Connection) -> list[str]:
    """The indexes of `events` that hold one entry per row (a partial index, with a WHERE, does not)."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' ORDER BY name"
    ).fetchall()
    return [name for name, sql in rows if not (sql and " where " in sql.lower())]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def index_damage(conn: sqlite3.Connection, rows: int, id_sum: int, upto: int | None = None) -> list[str]:
    """Each index of `events` against the `rows` (and the sum of their ids) a scan of the table read,
    in the same read transaction (or, `upto`, of the rows up to that id, in any: rows are only appended):
    one line per index that disagrees."""
    out: list[str] = []
    bound = "" if upto is None else f" WHERE id <= {int(upto)}"
    for name in _indexes(conn):
        index = _quoted(name)
        # the rowids' sum through the index zymi reads streams by (0.08 s on 1M rows); the entry count
        # alone through the others (SQLite counts a b-tree's cells without decoding them: 0.01 s)
        summed = "COALESCE(SUM(id), 0)" if name == STREAM_INDEX else str(id_sum)
        try:
            count, total = conn.execute(f"SELECT COUNT(*), {summed} FROM events INDEXED BY {index}{bound}").fetchone()
        except sqlite3.DatabaseError as e:
            out.append(f"index {name} cannot be read: {e}")
            continue
        if (count, total) == (rows, id_sum):
            continue
        named = _named(conn, index, bound)
        out.append(f"index {name} disagrees with the table ({count} entries for {rows} rows){named}")
    return out


def _named(conn: sqlite3.Connection, index: str, bound: str) -> str:
    """The first rows the table holds and the index does not, and the reverse, as a clause."""
    try:
        missing = [r[0] for r in conn.execute(
            f"SELECT id FROM events NOT INDEXED{bound} EXCEPT SELECT id FROM events INDEXED BY {index}{bound} "
            f"ORDER BY 1 LIMIT {NAMED_ROWS}"
        )]  # fmt: skip
        stray = [r[0] for r in conn.execute(
            f"SELECT id FROM events INDEXED BY {index}{bound} EXCEPT SELECT id FROM events NOT INDEXED{bound} "
            f"ORDER BY 1 LIMIT {NAMED_ROWS}"
        )]  # fmt: skip
    except sqlite3.DatabaseError:
        return ""
    parts = []
    if missing:
        parts.append(f"rows missing from it: {', '.join(map(str, missing))}")
    if stray:
        parts.append(f"entries pointing at no row: {', '.join(map(str, stray))}")
    return (": " + "; ".join(parts)) if parts else ""


def scan_store(
    conn: sqlite3.Connection,
    heads: Mapping[str, tuple[int, str]],
    stop: threading.Event,
    *,
    has_hash: bool,
    part: tuple[int, int] | None = None,
) -> ChainScan:
    """Every row in global order (the table itself, not an index) through a `ChainScan`, then each
    index compared with what was read, all in one read transaction (one snapshot, whatever another
    process commits meanwhile). A table SQLite finds corrupt part way is reported in `damage`, with
    the chains as far as they were read. Stops within a chunk of rows once `stop` is set.

    `part` (after, upto): only the rows whose ids are in (after, upto], a part of a split scan
    (`chain_split`; a later part when `after` > 0), and no index check (the split's caller makes it)."""
    # what the hash covers, as the bytes it covers (no text decoded to be encoded again); a store
    # in UTF-16 (zymi writes UTF-8) is read as text, which `ChainScan` checks row by row
    utf8 = conn.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
    event_id, data = ("CAST(event_id AS BLOB)", "CAST(data AS BLOB)") if utf8 else ("event_id", "data")
    hashes = "prev_hash, hash" if has_hash else "'', ''"
    ids = "" if part is None else f" WHERE id > {int(part[0])} AND id <= {int(part[1])}"
    sql = f"SELECT id, {event_id}, stream_id, sequence, {data}, {hashes} FROM events NOT INDEXED{ids} ORDER BY id"
    first = itemgetter(0)
    conn.execute("BEGIN")
    try:
        for text_factory in (str, TEXT_ANY):  # SQLite's own decoding unless some text is not UTF-8
            conn.text_factory = text_factory
            scan = ChainScan(heads, continues=part is not None and part[0] > 0)
            count = id_sum = 0
            try:
                cursor = conn.execute(sql)
                while not stop.is_set() and (rows := cursor.fetchmany(SCAN_CHUNK)):
                    scan.feed(rows)
                    count += len(rows)
                    id_sum += sum(map(first, rows))
            except sqlite3.OperationalError as e:
                if NOT_UTF8 in str(e) and text_factory is str:
                    continue
                raise
            except sqlite3.DatabaseError as e:  # SQLITE_CORRUPT, SQLITE_NOTADB: the table's pages
                scan.damage.append(f"reading the table stopped after {count} row(s): SQLite: {e}")
                return scan
            finally:
                scan.rows_read, scan.id_sum = count, id_sum
            scan.read_whole = not stop.is_set()
            if scan.read_whole and part is None:
                scan.damage += index_damage(conn, count, id_sum)
            return scan
        raise AssertionError("unreachable: the second pass decodes any text")
    finally:
        end_read(conn)


def end_read(conn: sqlite3.Connection) -> None:
    """End the read transaction (on a damaged store, COMMIT itself may report the damage again)."""
    if conn.in_transaction:
        try:
            conn.execute("COMMIT")
        except sqlite3.DatabaseError:
            conn.rollback()
