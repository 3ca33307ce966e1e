"""A command's process ends when its work is over, even with a store connection left open.

An aiosqlite connection queries on a thread that is not a daemon: the interpreter's exit waits for it
until the connection is closed. The dashboard left one open when ctrl+q cancelled a worker that was
opening or closing its reader (Textual cancels the workers, then `asyncio.run` cancels every task left):
the process then hung after its last frame (14 quits in 60 at load 12). Here a reader is leaked on
purpose (its close does nothing, a reference kept) and the whole process must still end, promptly, with
the command's own exit code and output.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import LIMIT

MEMORY_DB = Path(__file__).parent / "oracle" / "memory" / "events.db"

LEAK_A_READER = """
import sys
from zymi_tui.events.sqlite_read import SqliteReader

kept = []

async def close_nothing(self):  # a close that never ran: cancelled before it could
    kept.append(self)

SqliteReader.close = close_nothing
from zymi_tui.cli import main

sys.argv = ["zymi-tui", *sys.argv[1:]]
raise SystemExit(main())
"""


@pytest.mark.parametrize("command", [["runs"], ["verify"], ["events", "--all", "--raw"]])
def test_a_process_ends_with_a_store_connection_left_open(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "events.db"
    db.write_bytes(MEMORY_DB.read_bytes())
    proc = subprocess.Popen(
        [sys.executable, "-c", LEAK_A_READER, *command, str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"`zymi-tui {' '.join(command)}` did not end within {LIMIT} s: a connection's thread held it")
    assert proc.returncode == 0, err.decode()
    assert out.strip(), err.decode()  # the command did its work before it ended
    assert b"Traceback" not in err, err.decode()
