"""A file moved over another without the cost ext4 gives `rename` there. Imports nothing from the package.

`os.replace(src, dst)` over an existing `dst` makes ext4 (its `auto_da_alloc`, on by default) start
writing `src`'s data out before it returns, and frees `dst`'s blocks as it unlinks it: for the 8,333
small files an lhar export of a 1M-event store moves over its earlier export, 1.0 s of CPU and 14.9 s
of wall (the rename waited on the disk). Linux's `renameat2(RENAME_EXCHANGE)` swaps the two names in
one step, with neither: `dst` holds the old file or the new one at every moment, as with a rename, and
the old file is left under `src`'s name for the caller to remove with its folder (`remove_folder`).

Unlinking a file whose blocks are on disk waits on the disk (ext4's journal), ~2.5 ms a file here
while other writers are busy, which unlinks on several threads share: 8,000 files of 20 kB written
35 s before, 20.6 s of wall on one thread, 1.0 s on 8, 0.5 s on 16 (0.26-0.49 s of CPU each way).
Cheaper still is no new file: a file that already holds the bytes to be written is kept (`kept_if_same`).
And the plain write every writer of a descriptor needs: all of some bytes (`write_all`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (ctypes and queue imported when first needed: most exports replace nothing)
    import queue

RENAME_EXCHANGE = 2  # linux/fs.h
_NOWAIT = getattr(os, "RWF_NOWAIT", 0)  # a read of the bytes in memory only (Linux 4.14 on; 0: none)
UNLINK_THREADS = 16  # threads unlinking a folder's files (`remove_folder`)

_renameat2: Any = None  # the C library's function once looked up (False: none)


def _exchange_function() -> Any:
    """glibc's `renameat2` (2.28 on), or False on another system or libc."""
    global _renameat2
    if _renameat2 is None:
        _renameat2 = False
        if sys.platform.startswith("linux"):
            import ctypes

            try:
                function = ctypes.CDLL(None, use_errno=True).renameat2
            except (OSError, AttributeError):
                return False
            function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            function.restype = ctypes.c_int
            _renameat2 = function
    return _renameat2


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


def mover(src_dir: int, dst_dir: int) -> Callable[[str], None]:
    """`move(name)`: the file `name` in the folder open as `src_dir` moved to the same name in `dst_dir`,
    as `os.replace` would (the same tree, the same errors); a plain file it replaces is swapped into
    `src_dir` instead of unlinked (`RENAME_EXCHANGE`), where the system has that."""
    exchange = _exchange_function()

    def move(name: str) -> None:
        nonlocal exchange
        if exchange:
            raw = os.fsencode(name)
            if exchange(src_dir, raw, dst_dir, raw, RENAME_EXCHANGE) == 0:
                if stat.S_ISREG(os.lstat(name, dir_fd=src_dir).st_mode):
                    return
                exchange(src_dir, raw, dst_dir, raw, RENAME_EXCHANGE)  # (a folder: put back, refused below)
            elif _errno() in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # not on this system
                exchange = False
        os.replace(name, name, src_dir_fd=src_dir, dst_dir_fd=dst_dir)  # (nothing to swap with: a new name)

    return move


def remove_folder(folder: str | os.PathLike[str]) -> None:
    """`shutil.rmtree(folder, ignore_errors=True)`, its own files unlinked by `UNLINK_THREADS` threads
    first (a folder of ours: the files in it are not links to be followed, and none is a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        names: list[str] = []
    else:
        try:
            names = os.listdir(fd)
            if len(names) > 1:
                threads = [
                    threading.Thread(target=_unlink_all, args=(fd, names[k::UNLINK_THREADS]))
                    for k in range(min(UNLINK_THREADS, len(names)))
                ]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        finally:
            os.close(fd)
    shutil.rmtree(folder, ignore_errors=True)


def _unlink_all(folder: int, names: list[str]) -> None:
    for name in names:
        with contextlib.suppress(OSError):  # (a folder, or gone: rmtree's to meet)
            os.unlink(name, dir_fd=folder)


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (`os.write` may take a part of it: a pipe, a signal, a full disk's last
    bytes)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def new_file_mode() -> int:
    """The mode a file made now with mode 0o666 gets (the process's umask taken off)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def is_new_like(st: os.stat_result | None, mode: int) -> bool:
    """Whether `st` (an `os.lstat`; None: no file) is a plain file of ours, of one link and of `mode`."""
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        return False
    return st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == mode


def lstat_or_none(path: str | os.PathLike[str]) -> os.stat_result | None:
    """`os.lstat(path)`, None when it fails (no such file, or it cannot be looked at)."""
    try:
        return os.lstat(path)
    except OSError:
        return None


def is_new_file_like(path: str | os.PathLike[str], mode: int, *, missing: bool) -> bool:
    """Whether `path` is a plain file of ours, of one link and of the mode a new file gets (`missing`: not there)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return missing
    except OSError:
        return False
    return is_new_like(st, mode)


def kept_if_same(path: str | os.PathLike[str], st: os.stat_result | None, data: bytes, mode: int) -> bool:
    """Whether `path` (`st`: its `os.lstat`) is a plain file of ours of one link and of `mode` (as
    `is_new_like`) that holds exactly `data`: then it is kept, its time of modification set to now, as if
    written again (a new file of `data` moved over it would leave the same bytes and mode; this frees no
    blocks and writes nothing out). False: nothing was changed. (Its inode is kept: a reader holding it
    open reads the same bytes.) Only bytes in memory are read (`RWF_NOWAIT`): a file whose bytes would
    be read from the disk is not compared (reading it would wait where writing a new one does not)."""
    if st is None or st.st_size != len(data) or not is_new_like(st, mode) or not _NOWAIT:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        held = bytearray(len(data) + 1)  # (one read: a file that grew since `st` is not the same)
        read = os.preadv(fd, [held], 0, _NOWAIT)
        if read != len(data) or memoryview(held)[:read] != data:  # (fewer: not all of it in memory)
            return False
        os.utime(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


class SetAside:
    """Files moved out of the way into `folder` (made when the first is, by `make_folder`) and unlinked
    there by `UNLINK_THREADS` threads while the caller goes on: a file rewritten in place (`O_TRUNC`)
    frees its blocks, and ext4 writes the new ones out on its close (`auto_da_alloc`), both waiting on
    the disk in the writer's thread. `close` waits for the unlinks and removes the folder."""

    def __init__(self, make_folder: Callable[[], str]) -> None:
        self.make_folder = make_folder
        self.folder: str | None = None
        self.fd = -1
        self.names: queue.SimpleQueue[str | None] | None = None
        self.threads: list[threading.Thread] = []
        self.count = 0

    def put(self, path: str | os.PathLike[str]) -> bool:
        """Move the file `path` into the folder, to be unlinked there; False: left where it is (the folder
        cannot be made, as in a folder one may not write but whose files one may, or the move failed)."""
        if self.folder is None:
            if self.fd == -2:  # (the folder could not be made)
                return False
            import queue

            try:
                self.folder = self.make_folder()
                self.fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                if self.folder is not None:
                    shutil.rmtree(self.folder, ignore_errors=True)
                self.folder, self.fd = None, -2
                return False
            self.names = queue.SimpleQueue()
        name = str(self.count)
        try:
            os.rename(path, name, dst_dir_fd=self.fd)  # (a new name: nothing written out, nothing freed)
        except OSError:
            return False
        self.count += 1
        assert self.names is not None
        self.names.put(name)
        if len(self.threads) < UNLINK_THREADS:
            thread = threading.Thread(target=self._unlink, daemon=True)  # (an interrupted process's: left)
            thread.start()
            self.threads.append(thread)
        return True

    def _unlink(self) -> None:
        assert self.names is not None
        while (name := self.names.get()) is not None:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=self.fd)

    def close(self) -> None:
        for _ in self.threads:
            assert self.names is not None
            self.names.put(None)
        for thread in self.threads:
            thread.join()
        self.threads.clear()
        if self.folder is not None:
            os.close(self.fd)
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
