"""Many processes creating the same new store at once: every one opens it, appends, and the chain holds.

zymi 0.9.3 checks for the hash columns and then adds them without a lock, so two creators can both
run `ALTER TABLE … ADD COLUMN prev_hash` and the second fails with "duplicate column name" (seen in
3/60 of zymi's starts and, before the fix, 7/100 of our writer's opens). Ours must never fail.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.waiting import LIMIT

from .conftest import sha256

PROCESSES = 20
ROUNDS = 3

# Imports first, then every process waits for the same instant, so the opens really overlap.
SCRIPT = """
import asyncio, sys, time
from zymi_tui.events.kinds import Event
from zymi_tui.events.kinds import UserMessageReceived
from zymi_tui.events.messages import UserMessage
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.store import StoreError

async def go(path, n):
    writer = await SqliteWriter.open(path)
    try:
        kind = UserMessageReceived(content=UserMessage(content=f"hi {n}"), connector="t")
        await writer.append(Event.new(f"creator-{n}", kind, "t"))
    finally:
        await writer.close()

time.sleep(max(0.0, float(sys.argv[3]) - time.time()))
try:
    asyncio.run(go(sys.argv[1], sys.argv[2]))
except StoreError as e:
    print(e)
    sys.exit(2)
"""


def test_processes_creating_one_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        db = tmp_path / f"round{round_}" / "events.db"
        start = time.time() + 2.0  # time for every interpreter to start and import
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", SCRIPT, str(db), str(n), str(start)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for n in range(PROCESSES)
        ]
        outputs = [(p.wait(timeout=LIMIT), p.stdout.read() if p.stdout else "") for p in procs]
        failed = [out for code, out in outputs if code != 0]
        assert not failed, f"round {round_}: {len(failed)}/{PROCESSES} opens failed: {failed[0]}"
        con = sqlite3.connect(db)
        assert con.execute("SELECT COUNT(*) FROM events").fetchone()[0] == PROCESSES
        cols = [r[1] for r in con.execute("PRAGMA table_info(events)")]
        assert cols.count("prev_hash") == 1 and cols.count("hash") == 1
        assert con.execute("SELECT COUNT(*) FROM stream_heads").fetchone()[0] == PROCESSES
        con.close()
        before = sha256(db)
        verify = subprocess.run(
            [sys.executable, "-m", "zymi_tui", "verify", str(db)], capture_output=True, text=True, timeout=LIMIT
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert f"Verified {PROCESSES} event(s)" in verify.stdout
        assert sha256(db) == before
