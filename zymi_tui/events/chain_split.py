"""The chain scan of a large SQLite store in two parts by id range, on two cores: the ids up to the seam in
the caller's thread, those after it in a child process forked from the caller (`LaterPart`).

The later part takes up each stream it meets part way through from the link its first row there holds
(`ChainScan(continues=True)`, its `openings`); the seam check then holds each such link against the last row
the earlier part verified of that stream. A stream the seam check cannot join (the link names another row, the
earlier part never saw the stream, the later part starts it again at sequence 1, a legacy row at the seam) is
walked again alone, in sequence order (`out_of_order`), as every stream whose rows came out of order is: its
verdict is then the one a scan in one piece gives (and `zymi verify`, which walks each stream so).

Both parts read the rows up to one id, read after the heads (`upto`): rows appended meanwhile are left out of
both, as they are of the index check the caller then makes (`index_damage(..., upto=upto)`), so a store being
written reads whole although the parts read it in two snapshots (zymi's store is append-only).
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sqlite3
import threading
from array import array
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from zymi_tui.cores import usable_cores
from zymi_tui.events.chain_heads import Heads
from zymi_tui.events.hashchain import ChainScan, StreamVerdict
from zymi_tui.events.sqlite_check import end_read, index_damage, scan_store

SPLIT_IDS = 400_000  # a table whose ids reach this is scanned in two parts (below, a process costs more)
# The earlier part's share of the ids. Its process also reads the heads, runs SQLite's quick_check in a thread
# beside the scan, compares the indexes and joins the parts: ~1.9 s of CPU besides the scan at a million events
# (3.9-4.0 s with half the ids, against the later part's 2.1 s). Three threads on two cores, quick_check's
# ~0.95 s ends first; the two scans then end together when the earlier part has ~40% of the ids.
EARLIER_PERCENT = 40


def split_ids() -> int:
    """SPLIT_IDS, or ZYMI_TUI_SPLIT_IDS (the tests lower it to split a small store)."""
    return int(os.environ.get("ZYMI_TUI_SPLIT_IDS", SPLIT_IDS))


def seam_of(upto: int) -> int | None:
    """The last id of the earlier part of a table whose ids reach `upto` (EARLIER_PERCENT of them); None: scanned
    in one part (a small table, or one core: the parts cost ~8% more CPU than one scan, paid back only by a
    second core)."""
    return upto * EARLIER_PERCENT // 100 if upto >= max(split_ids(), 2) and usable_cores() >= 2 else None


class JoinedScan(ChainScan):
    """Two parts' scans joined at the seam: what `verify` reads of a `ChainScan` (`verdict`, `streams`,
    `out_of_order`, `damage`), each verdict made when it is asked for from both parts' (see the module's
    docstring)."""

    def __init__(self, earlier: ChainScan, later: PartResult) -> None:
        super().__init__({})  # (no scan's state: none made from the heads)
        self.heads = heads = earlier.heads
        self.earlier, self.openings = earlier, later.openings
        self.later_verdicts = dict(later.verdicts)  # (few: the streams not at their heads there)
        self.later_at_head = bytearray(len(heads))  # 1 at the place of a stream the later part verified to its head
        places = array("I")
        places.frombytes(later.at_head)
        for i in places:
            self.later_at_head[i] = 1
        again = earlier.settle() | set(later.out_of_order)
        for stream in self._later_streams():
            a = earlier.verdict(stream)
            opening = later.openings.get(stream)
            if a is None:
                if opening is not None:  # it links to a row the earlier part never read of this stream
                    again.add(stream)
            elif a.problem is None and (opening is None or opening != a.last):
                again.add(stream)  # the link at the seam does not name the earlier part's last row
        self.out_of_order = again

    def _later_streams(self) -> Iterator[str]:
        yield from self.later_verdicts
        at_head = self.later_at_head
        for stream, place in self.heads.places.items():
            if at_head[place]:
                yield stream

    def _later(self, stream: str) -> StreamVerdict | None:
        fields = self.later_verdicts.get(stream)
        if fields is not None:
            return StreamVerdict(*fields)
        place = self.heads.places.get(stream)
        if place is None or not self.later_at_head[place]:
            return None
        return _made_at_head(stream, self.heads.at(place), self.openings.get(stream))

    def settle(self) -> set[str]:
        return self.out_of_order

    def streams(self) -> Iterator[str]:
        earlier = self.earlier
        yield from earlier.streams()
        yield from (s for s in self.later_verdicts if s not in earlier.heads and s not in earlier.lasts)

    def verdict(self, stream: str) -> StreamVerdict | None:
        a, b = self.earlier.verdict(stream), self._later(stream)
        if b is None or (a is not None and a.problem is not None):
            return a  # (its first problem is in the earlier part)
        if a is None:
            return b
        # (a link at the seam that does not name the earlier part's last row: its stream is in `out_of_order`)
        return StreamVerdict(
            stream,
            rows=a.rows + b.rows,
            verified=a.verified + b.verified,
            legacy=a.legacy + b.legacy,
            problem=b.problem,
            bad_sequence=b.bad_sequence,
            bad_global_id=b.bad_global_id,
            last=b.last if b.verified else a.last,
            hash_at_head=b.hash_at_head if b.hash_at_head is not None else a.hash_at_head,
        )


def joined(earlier: ChainScan, later: PartResult) -> JoinedScan:
    """The verdicts of both parts as one scan's (see the module's docstring)."""
    scan = JoinedScan(earlier, later)
    scan.damage = earlier.damage + later.damage
    scan.rows_read = earlier.rows_read + later.rows_read
    scan.id_sum = earlier.id_sum + later.id_sum
    return scan


class PartResult(msgspec.Struct, frozen=True):
    """What the later part's process sends back (pickled: a stream id may hold lone surrogates).

    A stream whose rows there all verified up to its head (of a store zymi finished writing, nearly all) is
    sent as its place in the heads (`at_head`, 4 bytes: both processes hold the heads in the same order), its
    verdict made again from its head and opening; every other stream's verdict in full (`verdicts`). On a
    million-event store this is 120 KB instead of 30,000 verdicts' tuples (13.7 MB once unpickled)."""

    verdicts: list[tuple[str, tuple[Any, ...]]]
    at_head: bytes  # array("I") of places in the heads' order
    openings: dict[str, tuple[int, str]]
    out_of_order: list[str]
    damage: list[str]
    rows_read: int
    id_sum: int


def _at_head(verdict: StreamVerdict, head: tuple[int, str], opening: tuple[int, str] | None) -> bool:
    """Whether `verdict` is the one `_made_at_head` makes again from the head and the opening alone."""
    if verdict.problem is not None or verdict.legacy or verdict.last != head:
        return False
    checked = head[0] - (0 if opening is None else opening[0])
    return verdict.rows == verdict.verified == checked and verdict.hash_at_head == head[1]


def _made_at_head(stream: str, head: tuple[int, str], opening: tuple[int, str] | None) -> StreamVerdict:
    checked = head[0] - (0 if opening is None else opening[0])
    return StreamVerdict(stream, rows=checked, verified=checked, last=head, hash_at_head=head[1])


def part_result(scan: ChainScan) -> PartResult:
    openings, places, at_head, rest = scan.openings, scan.heads.places, array("I"), []
    out_of_order = sorted(scan.settle())
    for stream in scan.streams():
        v = scan.verdict(stream)
        if v is None:
            continue
        place = places.get(stream)
        if place is not None and _at_head(v, scan.heads.at(place), openings.get(stream)):
            at_head.append(place)
        else:
            rest.append((stream, msgspec.structs.astuple(v)))
    return PartResult(rest, at_head.tobytes(), openings, out_of_order, scan.damage, scan.rows_read, scan.id_sum)


class LaterPart:
    """The later part, scanned by a child forked at once: it holds the heads as they are here (nothing is sent to
    it, nothing imported or read again: ~0.6-1 s of CPU a spawned interpreter cost at a million events) and
    sends its `PartResult` back through a pipe. `result` waits for it (from a thread), `stop` ends it.

    Forked before the caller starts a thread of its own (the SQLite check beside the scan: a child forked while
    another thread is inside SQLite could be born with one of SQLite's locks held), with Ctrl-C blocked: the
    caller handles it and stops the child. A caller that dies closes the child's end of `alive`: it ends at once."""

    def __init__(self, uri: str, heads: Heads, after: int, upto: int, has_hash: bool) -> None:
        self.source, sink = os.pipe()
        watched, self.alive = os.pipe()  # (`alive` is never written: its end reads EOF once this process is gone)
        gc.freeze()  # the child's collections leave the objects it was born with alone (their pages not copied)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        self.pid = -1
        try:
            self.pid = os.fork()
        finally:
            if self.pid != 0:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                gc.unfreeze()
        if self.pid == 0:  # the child: scans, writes its pickled part, and exits without any exit handler
            try:
                os.close(self.source)
                os.close(self.alive)
                _exit_when_closed(watched)
                got = _scanned(uri, heads, after, upto, has_hash)
                with os.fdopen(sink, "wb") as pipe:
                    pipe.write(pickle.dumps(got, pickle.HIGHEST_PROTOCOL))
            finally:
                os._exit(0)
        os.close(sink)
        os.close(watched)
        self.after, self.upto = after, upto
        self.running = True
        self.lock = threading.Lock()  # (`stop` and `stop_on`, from two threads: no signal sent once it is waited for)

    def result(self) -> PartResult:
        """The part's scan, or sqlite3.DatabaseError (its one line) when it could not be made or was stopped."""
        with os.fdopen(os.dup(self.source), "rb") as pipe:
            out = pipe.read()
        self.stop()
        try:
            got = pickle.loads(out)
        except Exception:  # whatever a cut-off pickle raises
            raise sqlite3.DatabaseError("the later part of the chain scan ended without its rows' verdicts") from None
        if isinstance(got, str):
            raise sqlite3.DatabaseError(got)
        return PartResult(*got)

    def stop(self) -> None:
        """The child ended (killed unless it is done) and waited for; our ends of its pipes closed."""
        with self.lock:
            if not self.running:
                return
            self.running = False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.source)
        os.close(self.alive)

    def stop_on(self, stop: threading.Event) -> None:
        """Kill the child once `stop` is set (`result` or `stop` then waits for it and closes the pipes)."""
        stop.wait()
        with self.lock:
            if self.running:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)


def later_part(uri: str, heads: Mapping[str, tuple[int, str]], upto: int, has_hash: bool) -> LaterPart | None:
    """The later part of a table whose ids reach `upto`, forked now; None when it is scanned in one part
    (`seam_of`)."""
    seam = seam_of(upto)
    return None if seam is None else LaterPart(uri, Heads.of(heads), seam, upto, has_hash)


def _scanned(uri: str, heads: Heads, after: int, upto: int, has_hash: bool) -> tuple[Any, ...] | str:
    """The later part's scan as plain values, or SQLite's error as a line (in the forked child)."""
    from zymi_tui.events.sqlite_schema import LOCK_WAIT_S

    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as e:
        return str(e) or type(e).__name__
    try:
        conn.execute(f"PRAGMA busy_timeout={int(LOCK_WAIT_S * 1000)}")
        scan = scan_store(conn, heads, threading.Event(), has_hash=has_hash, part=(after, upto))
        return msgspec.structs.astuple(part_result(scan))
    except sqlite3.Error as e:
        return str(e) or type(e).__name__
    finally:
        conn.close()


def _exit_when_closed(fd: int) -> None:
    """This (forked) process ends as soon as `fd` reads EOF: its caller's end of the pipe closed."""

    def watch() -> None:
        while os.read(fd, 4096):
            pass
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def scan_in_two(
    conn: sqlite3.Connection,
    later: LaterPart,
    heads: Mapping[str, tuple[int, str]],
    stop: threading.Event,
    *,
    has_hash: bool,
) -> ChainScan:
    """`scan_store` of the rows up to `later.upto`, in two parts joined at `later.after` (the later one in the
    child `later` started), then each index checked against the rows both read."""
    upto = later.upto
    # a stop (the caller's, set when it is done or cancelled) ends the later part too
    threading.Thread(target=later.stop_on, args=(stop,), daemon=True).start()
    try:
        earlier = scan_store(conn, heads, stop, has_hash=has_hash, part=(0, later.after))
        if stop.is_set():
            return earlier
        scan = joined(earlier, later.result())
    finally:
        later.stop()
    if earlier.read_whole and not scan.damage:  # (a table SQLite could not read whole: named already)
        conn.execute("BEGIN")
        try:
            # nothing appended since (the table ends at the same id): each index is checked whole, as a scan in
            # one piece checks it (an index's entries counted without a bound are counted from its b-tree's pages)
            ends_at = conn.execute("SELECT max(id) FROM events").fetchone()[0]
            bound = None if ends_at == upto else upto
            scan.damage += index_damage(conn, scan.rows_read, scan.id_sum, bound)
        finally:
            end_read(conn)
    return scan
