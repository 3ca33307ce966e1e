"""`events --all --raw` listed by two processes (`events/raw_pair.py`), seen from the outside: real processes,
the output a pipe. The same bytes and warnings as one process writes; `| head`, Ctrl-C and a kill of either
process end everything with no traceback and no process left behind."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zymi_tui.events.kinds import Event, LlmCallStarted
from zymi_tui.events.sqlite_write import SqliteWriter

ROOT = Path(__file__).parent.parent
ORACLE = Path(__file__).parent / "oracle"
PARTNER = "zymi_tui.events.raw_pair"


def make_store(path: Path, n: int) -> Path:
    async def go() -> None:
        async with await SqliteWriter.open(path) as w:  # (a transaction of 500 events: the ids are the same)
            for at in range(0, n, 500):
                kinds = [
                    LlmCallStarted(iteration=i, message_count=1, approx_context_chars=i)
                    for i in range(at, min(n, at + 500))
                ]
                await w.append_many([Event.new(f"run-{k.iteration % 7}", k, "t" * (k.iteration % 50)) for k in kinds])

    asyncio.run(go())
    return path


def env(paired: bool) -> dict[str, str]:
    return {**os.environ, "ZYMI_TUI_RAW_PAIR_IDS": "1" if paired else "1000000000"}


def listing(db: Path, paired: bool, *pre: str) -> subprocess.CompletedProcess[bytes]:
    argv = [*pre, sys.executable, "-m", "zymi_tui", "events", str(db), "--all", "--raw"]
    return subprocess.run(argv, capture_output=True, env=env(paired), cwd=ROOT, timeout=120)


def partners(db: Path) -> list[int]:
    """The partner processes listing `db` (their command line names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if PARTNER.encode() in cmd and any(str(db).encode() in part for part in cmd):
                found.append(int(entry.name))
    return found


def gone(db: Path, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while partners(db):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def damage(db: Path) -> None:
    """Rows another writer wrote (spaced JSON), one not UTF-8 and one not JSON, on the second and third pages."""
    con = sqlite3.connect(db)
    data = con.execute("SELECT data FROM events WHERE id = 2500").fetchone()[0]
    con.execute("UPDATE events SET data = ? WHERE id = 2500", (data.replace('":', '": '),))
    con.execute("UPDATE events SET data = CAST(? AS TEXT) WHERE id = 4100", (b'{"id":"\xff"}',))
    con.execute("UPDATE events SET data = '{' WHERE id = 4101")
    con.commit()
    con.close()


SAMPLES = sorted(ORACLE.glob("*/events.db")) + sorted((ROOT / "sample_stores").glob("*/events.db"))


@pytest.mark.parametrize("db", SAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_the_oracle_and_sample_stores_list_the_same_bytes_paired(db: Path) -> None:
    one, two = listing(db, False), listing(db, True)
    assert one.returncode == two.returncode == 0
    assert hashlib.sha256(two.stdout).digest() == hashlib.sha256(one.stdout).digest() and two.stderr == one.stderr


def test_pages_declined_by_either_process_are_written_in_place_and_named_once(tmp_path: Path) -> None:
    db = make_store(tmp_path / "e.db", 6500)  # pages of 2000 ids: the partner has the second and fourth
    damage(db)
    one, two = listing(db, False), listing(db, True)
    assert two.returncode == 0 and two.stdout == one.stdout and two.stderr == one.stderr
    lines = two.stdout.splitlines()
    assert len(lines) == 6498  # rows 4100 and 4101 skipped, each named once
    assert two.stderr.count(b"row 4100") == 1 and two.stderr.count(b"row 4101") == 1
    single_core = listing(db, True, "taskset", "-c", "0")
    assert single_core.stdout == one.stdout and single_core.stderr == one.stderr


def _started(db: Path) -> subprocess.Popen[bytes]:
    """The listing, its stdout a pipe nobody reads yet (both processes soon wait on it), once its partner runs."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "zymi_tui", "events", str(db), "--all", "--raw"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(True),
        cwd=ROOT,
    )
    deadline = time.monotonic() + 30
    while not partners(db):
        assert proc.poll() is None and time.monotonic() < deadline, "no partner process appeared"
        time.sleep(0.02)
    assert proc.stdout is not None
    proc.stdout.read(1000)
    return proc


@pytest.fixture
def big(tmp_path: Path) -> Path:
    return make_store(tmp_path / "big.db", 12000)


def test_a_closed_pipe_ends_both_quietly(big: Path) -> None:
    argv = f"{sys.executable} -m zymi_tui events {big} --all --raw | head -n 2500"
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {argv}"], capture_output=True, env=env(True), cwd=ROOT)
    assert done.returncode == 0 and done.stderr == b""
    assert len(done.stdout.splitlines()) == 2500
    assert gone(big)


def test_ctrl_c_ends_both_with_one_line(big: Path) -> None:
    proc = _started(big)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert len(out.splitlines()) < 8000  # of 12000: it stopped within a page or two, not at the end
    assert b"Traceback" not in err and len(err.splitlines()) == 1
    assert gone(big)


def test_a_killed_partner_is_one_line_and_a_failure(big: Path) -> None:
    proc = _started(big)
    for pid in partners(big):
        os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert b"Traceback" not in err and len(err.splitlines()) == 1 and b"cut short" in err


def test_a_killed_caller_leaves_no_partner(big: Path) -> None:
    proc = _started(big)
    proc.kill()
    assert proc.stdout is not None
    proc.stdout.read()  # the partner may be writing its page: it ends once that is read
    proc.wait()
    assert gone(big)
