"""The one-pass chain check keeps of each stream only its last (sequence, hash) between the batches it fetches:
a row changed in the middle of a stream is still found when it is the last row of one batch or the first of
the next, as the real `zymi verify` finds it; and the dashboard's check, run by a process of its own, says so
and ends with the dashboard (or with the process that started it)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_store_verify import zymi_verify
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.verify import verify_store
from zymi_tui.events.verify_process import CheckProcess, check_store

from .conftest import copy_store, oracle_db, requires_zymi

CHUNK = 50  # rows a batch of the scan (SCAN_CHUNK, lowered so that a small store holds many batches)


def mid_stream_rows_at_a_boundary(db: Path) -> list[tuple[int, str, int]]:
    """(id, stream, sequence) of the rows that end or start a batch of CHUNK rows in id order, and are
    neither the first nor the last row of their stream."""
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT e.id, e.stream_id, e.sequence FROM events e "
        "WHERE e.sequence > 1 AND e.sequence < (SELECT max(sequence) FROM events WHERE stream_id = e.stream_id) "
        "ORDER BY e.id"
    ).fetchall()
    order = {gid: n for n, (gid,) in enumerate(con.execute("SELECT id FROM events ORDER BY id"))}
    con.close()
    return [r for r in rows if order[r[0]] % CHUNK in (CHUNK - 1, 0) and order[r[0]] > 0]


def change_one_byte(db: Path, gid: int) -> None:
    con = sqlite3.connect(db)
    data: str = con.execute("SELECT data FROM events WHERE id = ?", (gid,)).fetchone()[0]
    i = data.index('"source":"') + len('"source":"')
    con.execute(
        "UPDATE events SET data = ? WHERE id = ?", (data[:i] + ("X" if data[i] != "X" else "Y") + data[i + 1 :], gid)
    )
    con.commit()
    con.close()


def test_the_store_has_rows_at_batch_boundaries_in_the_middle_of_streams() -> None:
    found = mid_stream_rows_at_a_boundary(oracle_db("chat_profile"))
    assert [gid % CHUNK for gid, _, _ in found[:4]] == [0, 0, 1, 0]  # ids from 1: ends (0) and a start (1)


@requires_zymi
@pytest.mark.parametrize("which", range(4))
async def test_a_row_changed_at_a_batch_boundary_is_found_as_zymi_finds_it(
    which: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("zymi_tui.events.sqlite_check.SCAN_CHUNK", CHUNK)
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    gid, stream, seq = mid_stream_rows_at_a_boundary(db)[which]
    change_one_byte(db, gid)
    async with await SqliteReader.open(db) as reader:
        report = await verify_store(reader)
    broken = [(v.stream_id, v.bad_sequence, v.bad_global_id) for v in report.verdicts if not v.ok]
    assert broken == [(stream, seq, gid)]
    run = zymi_verify(db)
    assert run.returncode != 0 and f"{stream}: FAILED" in run.stdout, run.stdout + run.stderr
    others = [line for line in run.stdout.splitlines() if "FAILED" in line]
    assert len(others) == 1  # zymi finds that stream alone broken, as we do
    summary = await check_store(db)  # what the dashboard's check process reports (at its own batch size)
    assert next(iter(summary.broken.values())).startswith(f"{stream}: hash mismatch at sequence {seq}")


def test_the_check_process_reports_a_changed_row(tmp_path: Path) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    gid, stream, seq = mid_stream_rows_at_a_boundary(db)[0]
    change_one_byte(db, gid)
    check = CheckProcess(db)
    try:
        summary = check.result()
    finally:
        check.stop()
    assert summary.streams == 4 and len(summary.broken) == 1
    assert next(iter(summary.broken.values())).startswith(f"{stream}: hash mismatch at sequence {seq}")


def test_the_check_process_ends_when_its_starter_dies(tmp_path: Path) -> None:
    """A check waiting for its store (locked by a writer: it would wait LOCK_WAIT_S, 5 s) ends at once when
    the process that started it is killed: no check is left running behind a dashboard that died."""
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    lock = sqlite3.connect(db, isolation_level=None)
    lock.execute("PRAGMA journal_mode=DELETE")
    lock.execute("BEGIN EXCLUSIVE")
    code = (
        "import time; from pathlib import Path; from zymi_tui.events.verify_process import CheckProcess\n"
        f"c = CheckProcess(Path({str(db)!r})); print(c.proc.pid, flush=True); time.sleep(60)"
    )
    starter = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    pid = int(starter.stdout.readline())
    try:
        time.sleep(1.0)
        assert _alive(pid), "the check should be waiting for the lock"
        starter.kill()
        starter.wait()
        deadline = time.monotonic() + 2.0  # well before the lock wait would end it
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(pid), "the check process outlived the process that started it"
    finally:
        starter.kill()
        starter.wait()
        starter.stdout.close()
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        lock.rollback()
        lock.close()


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by its parent, is not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_the_dashboard_checks_a_large_store_by_a_process_that_ends_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store of OWN_PROCESS_BYTES or more (lowered to 0 here) is checked by `verify_process` from the first
    frame on: its verdict turns the banner red for a changed row, and the process is gone once the app is."""
    from tests.tui_support import make_app, settle
    from tests.waiting import pilot_until

    monkeypatch.setattr("zymi_tui.tui.chain_freshness.OWN_PROCESS_BYTES", 0)
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    gid, stream, seq = mid_stream_rows_at_a_boundary(db)[0]
    change_one_byte(db, gid)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        banner = lambda: str(main.query_one("#banner").render())  # noqa: E731
        await pilot_until(pilot, lambda: "fail the hash-chain check" in banner(), "the check's verdict", limit=60)
        check = main.chain_check
        assert check is not None  # the verdict came from the process
        assert main.broken == {stream: f"{stream}: hash mismatch at sequence {seq} (event {_event_id(db, gid)}): "
                               "the row's data or id was changed after it was written"}  # fmt: skip
    assert check.proc.poll() is not None


def _event_id(db: Path, gid: int) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("SELECT event_id FROM events WHERE id = ?", (gid,)).fetchone()[0])
    finally:
        con.close()
