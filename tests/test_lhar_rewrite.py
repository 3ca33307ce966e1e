"""`export --format lhar -o FOLDER/` over the files of an earlier export: a plain file of ours is set
aside and a new one written in its place (telemetry/lhar_files.py, file_swap.py `SetAside`), not
truncated (its blocks freed, and the new ones written out at its close, in the writer's thread); a
file that is a link, or of another mode, is still written through as before. The partner's files are
swapped in (`mover`: `RENAME_EXCHANGE`), with `os.replace`'s outcome and errors. A plain file of ours
that holds exactly the session's bytes is kept (`kept_if_same`), by either process: nothing written,
nothing freed, its time of modification now."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import cloned_runs

ROOT = Path(__file__).parent.parent


def _export(db: Path, folder: Path, pair_events: int = 1_000_000_000) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "ZYMI_TUI_LHAR_PAIR_EVENTS": str(pair_events)}  # (by default one process: the caller's)
    argv = [sys.executable, "-m", "zymi_tui", "export", str(db), "--format", "lhar", "-o", f"{folder}/"]
    proc = subprocess.run(argv, capture_output=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def _files(folder: Path) -> dict[str, tuple[int, str]]:
    """Every entry of `folder`, hidden ones too: (its inode, its bytes' sha256)."""
    return {p.name: (p.lstat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest()) for p in folder.iterdir()}


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cloned_runs(tmp_path_factory.mktemp("lhar_rewrite"), 3)


def test_an_earlier_exports_files_are_replaced_by_new_ones(three_runs: Path, tmp_path: Path) -> None:
    """Each session file an earlier export left is a new file in its place (another inode) with the
    export's bytes, the old one left whole to whoever holds it open, and nothing else is left."""
    folder = tmp_path / "out"
    _export(three_runs, folder)
    first = _files(folder)
    for name in first:
        (folder / name).write_text("stale\n")  # (the same file: its inode, mode and link kept)
    held = {name: os.open(folder / name, os.O_RDONLY) for name in first}  # (its inode not reused meanwhile)
    try:
        _export(three_runs, folder)
        again = _files(folder)
        assert len(first) == 3 and sorted(again) == sorted(first)  # (no hidden folder left)
        for name, (inode, digest) in again.items():
            assert digest == first[name][1]
            assert inode != os.fstat(held[name]).st_ino and os.pread(held[name], 100, 0) == b"stale\n"
    finally:
        for fd in held.values():
            os.close(fd)


def test_a_linked_or_other_mode_file_is_written_through(three_runs: Path, tmp_path: Path) -> None:
    """A session file that is a symbolic link, a file of two links or of another mode is written in place, as
    before: the link's target, the other link and the mode keep what they are."""
    folder = tmp_path / "out"
    _export(three_runs, folder)
    names = sorted(p.name for p in folder.iterdir())
    want = {n: (folder / n).read_bytes() for n in names}
    outside, other = tmp_path / "outside.lhar", tmp_path / "other_link.lhar"
    outside.write_text("stale\n")
    (folder / names[0]).unlink()
    (folder / names[0]).symlink_to(outside)
    (folder / names[1]).write_text("stale\n")
    os.link(folder / names[1], other)
    (folder / names[2]).write_text("stale\n")
    (folder / names[2]).chmod(0o600)
    _export(three_runs, folder)
    assert (folder / names[0]).is_symlink() and outside.read_bytes() == want[names[0]]
    assert other.read_bytes() == want[names[1]] and (folder / names[1]).stat().st_nlink == 2
    assert (folder / names[2]).stat().st_mode & 0o777 == 0o600 and (folder / names[2]).read_bytes() == want[names[2]]
    assert sorted(p.name for p in folder.iterdir()) == names


@pytest.fixture(scope="module")
def three_small_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs whose session files (20 kB) are each written at once (under `FILE_BUFFER`)."""
    return cloned_runs(tmp_path_factory.mktemp("lhar_rewrite_small"), 3, "memory")


@pytest.mark.parametrize("pair_events", [1_000_000_000, 1], ids=["one_process", "paired"])
def test_a_file_holding_the_same_bytes_is_kept(three_small_runs: Path, tmp_path: Path, pair_events: int) -> None:
    """Over an earlier export of the same store, a file that holds exactly its session's bytes is the
    same file (its inode), its time of modification now; one of the same size with a byte changed is a
    new file with the export's bytes (the old one left whole to whoever holds it open), and so is one
    whose bytes are not in memory (not read from the disk to be compared); paired or not (the partner's
    files kept where they are), and nothing else is left."""
    folder = tmp_path / "out"
    _export(three_small_runs, folder)
    first = _files(folder)
    names = sorted(first)
    changed = folder / names[0]
    data = changed.read_bytes()
    stale = data[:-2] + (b"X" if data[-2:-1] != b"X" else b"Y") + data[-1:]
    changed.write_bytes(stale)  # (its size kept)
    for name in names:
        os.utime(folder / name, ns=(10**9, 10**9))  # (1970: a time no export writes)
    held = {name: os.open(folder / name, os.O_RDONLY) for name in names}  # (no inode reused meanwhile)
    os.fsync(held[names[1]])  # (its pages written out, then dropped from memory)
    os.posix_fadvise(held[names[1]], 0, 0, os.POSIX_FADV_DONTNEED)
    try:
        began = time.time_ns() - 10**9  # (a file system's clock is coarser)
        proc = _export(three_small_runs, folder, pair_events)
        again = _files(folder)
        assert sorted(again) == names and b"wrote 3 session file(s), " in proc.stderr  # (no hidden folder left)
        for name in names:
            assert again[name][1] == first[name][1] and (folder / name).stat().st_mtime_ns > began
        assert again[names[0]][0] != os.fstat(held[names[0]]).st_ino and os.pread(held[names[0]], len(data), 0) == stale
        assert again[names[1]][0] != os.fstat(held[names[1]]).st_ino
        assert again[names[2]][0] == os.fstat(held[names[2]]).st_ino
    finally:
        for fd in held.values():
            os.close(fd)


def _move(src: Path, dst: Path, name: str) -> None:
    from zymi_tui.file_swap import mover  # (here: the other tests run against a tree without it)

    s, d = os.open(src, os.O_RDONLY | os.O_DIRECTORY), os.open(dst, os.O_RDONLY | os.O_DIRECTORY)
    try:
        mover(s, d)(name)
    finally:
        os.close(s)
        os.close(d)


def test_a_move_leaves_what_os_replace_leaves(tmp_path: Path) -> None:
    """Over a file: the new file in its place (the old one, where the system swaps them, left in the source
    folder); to a new name: moved; over a folder: refused as `os.replace` refuses it, both left as they were."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    (src / "a.lhar").write_text("new\n")
    (dst / "a.lhar").write_text("old\n")
    (src / "b.lhar").write_text("new b\n")
    _move(src, dst, "a.lhar")
    _move(src, dst, "b.lhar")
    assert (dst / "a.lhar").read_text() == "new\n" and (dst / "b.lhar").read_text() == "new b\n"
    assert [p.read_text() for p in src.iterdir()] in ([], ["old\n"])
    (src / "c.lhar").write_text("new c\n")
    (dst / "c.lhar").mkdir()
    (dst / "c.lhar" / "kept").write_text("kept\n")
    with pytest.raises(IsADirectoryError):
        _move(src, dst, "c.lhar")
    assert (src / "c.lhar").read_text() == "new c\n" and (dst / "c.lhar" / "kept").read_text() == "kept\n"


def test_a_file_not_set_aside_is_left_in_place(tmp_path: Path) -> None:
    """Where the hidden folder cannot be made (a folder one may not write in, whose files one may write),
    the file stays where it is, to be truncated as before; a file set aside is gone once it closes."""
    from zymi_tui.file_swap import SetAside

    def refused() -> str:
        raise PermissionError(13, "Permission denied")

    (tmp_path / "a.lhar").write_text("old\n")
    aside = SetAside(refused)
    assert not aside.put(tmp_path / "a.lhar") and not aside.put(tmp_path / "a.lhar")
    aside.close()
    assert (tmp_path / "a.lhar").read_text() == "old\n"
    aside = SetAside(lambda: str(tmp_path / ".aside"))
    (tmp_path / ".aside").mkdir()
    assert aside.put(tmp_path / "a.lhar")
    aside.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
