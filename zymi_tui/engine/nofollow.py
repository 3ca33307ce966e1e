"""Opening the very file a file contract judged: the path the policy resolved (absolute, `..` and
symbolic links already followed) is walked again one folder at a time from `/`, each step opened
relative to the previous folder's descriptor and none of them following a symbolic link. A link put
on the way after the verdict (a folder or the file itself swapped for a link, during an approval
prompt or in a race) makes the open fail instead of being followed out of the judged place."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkOnTheWay(OSError):
    """A component of the judged path is now a symbolic link."""

    def __init__(self, where: Path) -> None:
        super().__init__(errno.ELOOP, f"{where} became a symbolic link after the policy's verdict")
        self.where = where


class FolderError(OSError):
    """A folder on the way could not be made or entered (the text of the OSError it wraps)."""


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode)
    except OSError:
        return False


def _enter(name: str, folder: int, here: Path, make: bool) -> int:
    """The descriptor of the folder `name` inside `folder` (made first if missing and `make`)."""
    while True:
        try:
            return os.open(name, _DIR, dir_fd=folder)
        except FileNotFoundError:
            if not make:
                raise
            try:
                os.mkdir(name, 0o777, dir_fd=folder)
            except FileExistsError:
                continue  # made meanwhile by someone else: enter it (unless it is a link)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, folder):
                raise LinkOnTheWay(here) from None
            raise


def open_judged(target: Path, flags: int, *, make_folders: bool = False, mode: int = 0o666) -> int:
    """A descriptor of `target` (absolute and free of links, as `Path.resolve` gives it) opened with
    `flags`; missing folders on the way made when `make_folders`. Raises LinkOnTheWay if a component
    is now a symbolic link, FolderError if a folder cannot be made or entered, else the open's OSError."""
    assert target.is_absolute(), target
    folder = os.open("/", _DIR)
    here = Path("/")
    folders = target.parts[1:-1]
    try:
        for i, name in enumerate(folders):
            here = here / name
            try:
                inner = _enter(name, folder, here, make_folders)
            except LinkOnTheWay:
                raise
            except OSError as e:
                code = e.errno or errno.EIO
                if make_folders and code == errno.ENOTDIR and i == len(folders) - 1:
                    code = errno.EEXIST  # the file's own folder is a file: as `Path.mkdir(exist_ok=True)` says
                raise FolderError(code, os.strerror(code)) from None
            os.close(folder)
            folder = inner
        try:
            return os.open(target.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
        except OSError as e:
            if e.errno == errno.ELOOP and _is_link(target.name, folder):
                raise LinkOnTheWay(target) from None
            raise
    finally:
        os.close(folder)
