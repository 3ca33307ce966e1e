"""Whether the dashboard's hash-chain check still describes the store.

The check reads the whole store once; a writer that commits afterwards (a new run, a row changed
in place, a store damaged by another process) makes its "N stream(s) verified" stale. A store's
stamp is what changes with any commit: for a SQLite file the size and modification time of the
file and of its `-wal` (a stat, never an open: see `events.sqlite_file`), and for any store the
highest global id the tail has seen. The check is run again when the stamp moves, at most once
per `RECHECK_S`, and never sooner than `IDLE_SHARE` times the last check's own duration after it (a
check of 1M events takes ~5-6 s of CPU, what `zymi-tui verify` takes: a store written without pause
costs at most a fifth of a core in checks).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zymi_tui.events.location import SqliteStore, StoreLocation

if TYPE_CHECKING:
    from zymi_tui.events.verify_process import CheckProcess

OWN_PROCESS_BYTES = 256 << 20  # a SQLite store this large (~220,000 events) is checked by a process of its own
RECHECK_S = 5.0  # at least this long between the end of one check and the start of the next
IDLE_SHARE = 4.0  # ... and at least this many times the last check's duration

Stamp = tuple[int, ...]


def _file_stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def checked_by_a_process(store: StoreLocation) -> bool:
    """Whether the store's hash chains are checked by a process of their own (`verify_process`: another core,
    its own memory), started with the dashboard's process: a SQLite store of OWN_PROCESS_BYTES or more. A
    smaller one (or a Postgres store) is checked in a thread of the dashboard once every run is listed
    (starting a process costs more than such a check: docs/performance-notes.md)."""
    if not isinstance(store, SqliteStore):
        return False
    files = (_file_stamp(store.path)[0], _file_stamp(Path(f"{store.path}-wal"))[0])
    return sum(size for size in files if size > 0) >= OWN_PROCESS_BYTES


def store_stamp(store: StoreLocation, last_global_id: int) -> Stamp:
    """What changes when anything is committed to `store` (see the module's note)."""
    if isinstance(store, SqliteStore):
        return (*_file_stamp(store.path), *_file_stamp(Path(f"{store.path}-wal")), last_global_id)
    return (last_global_id,)


@dataclass(frozen=True, slots=True)
class StartedCheck:
    """A store's first check by a process, started with the dashboard's own process (`observe`), before its
    screen's modules load: on a core of its own from the start, not after the first frame."""

    process: CheckProcess
    files: Stamp  # the store's file stamp before the check began (`store_stamp` without the last global id)
    began: float  # time.monotonic() then

    def stamp(self, last_global_id: int) -> Stamp:
        return (*self.files, last_global_id)


def start_check(store: StoreLocation) -> StartedCheck | None:
    """The store's check, started now if it is one a process checks (`checked_by_a_process`)."""
    if not isinstance(store, SqliteStore) or not checked_by_a_process(store):
        return None
    from zymi_tui.events.verify_process import CheckProcess

    files, began = store_stamp(store, 0)[:-1], time.monotonic()  # (before the process reads a row)
    return StartedCheck(CheckProcess(store.path), files, began)


@dataclass(slots=True)
class ChainFreshness:
    """The stamp the last check started from, and when it ended."""

    checked: Stamp | None = None
    ended: float = 0.0
    took: float = 0.0
    stale: bool = False
    damage: list[str] = field(default_factory=list)

    def landed(self, stamp: Stamp, damage: list[str], took: float) -> None:
        self.checked, self.ended, self.took, self.stale, self.damage = stamp, time.monotonic(), took, False, damage

    def recheck_now(self, current: Stamp) -> bool:
        """Whether the store moved since the check started (then `stale`: its files changed, or the tail saw
        a row past the last one the store held then; a tail still catching up to that row is no change),
        and a new check is due."""
        checked = self.checked
        if checked is None:
            return False
        if current[:-1] != checked[:-1] or current[-1] > checked[-1]:
            self.stale = True
        return self.stale and time.monotonic() - self.ended >= max(RECHECK_S, IDLE_SHARE * self.took)
