"""A SQLite store file looked at from outside SQLite, without ever dropping SQLite's locks.

POSIX record locks (fcntl) belong to a process and a file, not to a descriptor: closing ANY
descriptor of a file drops every lock the process holds on it, SQLite's own included ("How To
Corrupt An SQLite Database File", section 2.2). A process that holds a connection to a store and opens
and closes the same file with `open()` (to read its header, say) leaves its connection unlocked:
another process then checkpoints and resets the WAL under it, and the store is corrupted (4
writers corrupted it in 5 of 5 trials, issue 29). So here:

- what the reader and writer check before opening a store (present, a regular file, readable, not
  empty) is decided by `stat` and `access`, which open nothing; whether it is a SQLite file at all
  is left to SQLite ("file is not a database");
- the one header byte that must be read by hand (is it a WAL store?) is read through a descriptor
  opened once per file and kept for the process's lifetime, never closed;
- a file tool of the engine that opens a store file (an agent asked to read `.zymi/events.db`) hands
  its descriptor to `keep_if_store_file`, which keeps it open instead of letting it be closed.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

from zymi_tui.events.store import StoreError, stat_store_path

WAL_FILES = ("", "-wal", "-shm", "-journal")  # a store and the files SQLite keeps beside it

_lock = threading.Lock()
_kept: dict[tuple[int, int], int] = {}  # (st_dev, st_ino) -> a descriptor never closed
_stores: set[str] = set()  # the store paths this process opened with SQLite
_handed: list[int] = []  # descriptors of store files handed to `keep_if_store_file`, never closed


def check_store_file(path: Path) -> None:
    """A StoreError with one line when `path` cannot be a store to read: missing, a folder, a FIFO
    or device, unreadable, or empty. Opens nothing (see the module's note)."""
    st = stat_store_path(path)
    if st is None:
        raise StoreError(f"no event store at {path}: no such file")
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path} is a folder: pass the .db file, or the project folder that holds .zymi/")
    if not os.access(path, os.R_OK):
        raise StoreError(f"cannot read {path}: {os.strerror(errno.EACCES)}")
    if st.st_size == 0 and _size(Path(f"{path}-wal")) == 0:
        raise StoreError(f"{path} is empty: not a zymi event store (nothing has been written to it)")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def note_store(path: Path) -> None:
    """Record that this process opens `path` with SQLite (see `keep_if_store_file`)."""
    with _lock:
        _stores.add(str(path.resolve()))


def _kept_descriptor(path: Path) -> int:
    """The descriptor kept open for the file at `path` (opened on first use, never closed)."""
    st = path.stat()
    key = (st.st_dev, st.st_ino)
    with _lock:
        fd = _kept.get(key)
        if fd is None:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            _kept[key] = fd
        return fd


def is_wal(path: Path) -> bool:
    """Bytes 18-19 of the header are 2 in WAL mode (1 for rollback journals), read through the
    file's kept descriptor."""
    try:
        head = os.pread(_kept_descriptor(path), 20, 0)
    except OSError:
        return False
    return len(head) == 20 and head[18] == 2


def keep_if_store_file(fd: int) -> bool:
    """True (and `fd` kept open for the process's lifetime: the caller must not close it) when `fd`
    is a store this process opened with SQLite, or one of the files SQLite keeps beside it."""
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    with _lock:
        stores = list(_stores)
    for store in stores:
        for suffix in WAL_FILES:
            try:
                other = os.stat(store + suffix)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                with _lock:
                    _handed.append(fd)
                return True
    return False
