"""A process that holds a store open keeps SQLite's locks on it, whatever else it opens meanwhile.

POSIX drops every fcntl lock a process holds on a file when it closes ANY descriptor of that file
("How To Corrupt An SQLite Database File", section 2.2). Our reader used to read the header with `open()`
beside the writer's connection (`zymi-tui run` opens both): the writer's lock vanished, the next
process to close its connection believed itself the last one, checkpointed and deleted the WAL under
the writer, and the writer's later commits went to a deleted file (issue 29: 4 writers corrupted
the store in 5 trials of 5). The witness here is SQLite itself in another process: a connection
closing while ours still holds the store must leave the `-wal` file in place, and every event our
writer appended must be read back by a fresh process.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.waiting import LIMIT
from zymi_tui.events.kinds import Event, UserMessageReceived
from zymi_tui.events.messages import UserMessage
from zymi_tui.events.sqlite_file import keep_if_store_file
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_write import SqliteWriter

# another process: open, read, close (the last connection to close checkpoints and deletes the WAL)
OTHER = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "print(c.execute('SELECT COUNT(*) FROM events').fetchone()[0]); c.close()"
)


def _event(n: int) -> Event:
    return Event.new("locks", UserMessageReceived(content=UserMessage(content=f"m{n}"), connector="t"), "t")


def _count_elsewhere(db: Path) -> int:
    out = subprocess.run([sys.executable, "-c", OTHER, str(db)], capture_output=True, text=True, timeout=LIMIT)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


async def _write_beside(db: Path, touch: str) -> tuple[bool, int]:
    writer = await SqliteWriter.open(db)
    try:
        for n in range(3):
            await writer.append(_event(n))
        if touch == "reader":
            await (await SqliteReader.open(db)).close()
        else:  # what the engine's read_file tool does with a path that is the store
            fd = os.open(db, os.O_RDONLY)
            with open(fd, "rb", closefd=not keep_if_store_file(fd)) as f:
                f.read(100)
        seen = _count_elsewhere(db)  # another process opens and closes a connection meanwhile
        wal_kept = Path(f"{db}-wal").exists()
        for n in range(3, 6):
            await writer.append(_event(n))
        return wal_kept, seen
    finally:
        await writer.close()


def _check(db: Path, touch: str) -> None:
    wal_kept, seen = asyncio.run(_write_beside(db, touch))
    assert seen == 3
    assert wal_kept, "another process reset the WAL while our writer held the store: its locks were dropped"
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert con.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 6
    finally:
        con.close()
    assert _count_elsewhere(db) == 6


def test_opening_a_reader_beside_a_writer_keeps_the_writers_locks(tmp_path: Path) -> None:
    _check(tmp_path / "events.db", "reader")


def test_a_file_tool_reading_the_store_keeps_the_writers_locks(tmp_path: Path) -> None:
    _check(tmp_path / "events.db", "tool")


def test_only_a_store_and_its_side_files_are_kept(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    other = tmp_path / "notes.txt"
    other.write_text("x")

    async def go() -> list[bool]:
        writer = await SqliteWriter.open(db)
        try:
            await writer.append(_event(0))
            kept = []
            for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), other):
                fd = os.open(path, os.O_RDONLY)
                kept.append(keep_if_store_file(fd))
                if not kept[-1]:
                    os.close(fd)
            return kept
        finally:
            await writer.close()

    assert asyncio.run(go()) == [True, True, True, False]
