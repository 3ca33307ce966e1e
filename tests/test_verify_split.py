"""The chain scan of a large store in two parts by id range (`chain_split`): a stream that runs across the seam
is joined there, so a chain broken exactly at the seam (the last row of the earlier part, the first of the
later one, a link re-pointed, a row removed, a chain rewritten over a removed row, a stream started again) is
found as the scan in one piece finds it, and as the real `zymi verify` finds it."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.test_store_verify import zymi_verify
from tests.test_verify_batches import _alive, change_one_byte
from zymi_tui.events.chain_split import JoinedScan, seam_of
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_schema import LOCK_WAIT_S
from zymi_tui.events.verify import verify_store

from .conftest import copy_store, oracle_db, requires_zymi


def v2(event_id: str, sequence: int, data: str, prev: str) -> str:
    """ADR-0040's row hash, written out here (not the code under test)."""
    body = b"v2" + event_id.encode() + sequence.to_bytes(8, "little") + data.encode() + prev.encode()
    return "v2:" + hashlib.sha256(body).hexdigest()


def seam_at(con: sqlite3.Connection) -> int:
    """Where a scan split on this machine puts the seam of the store (with ZYMI_TUI_SPLIT_IDS lowered)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ZYMI_TUI_SPLIT_IDS", "1")
        mp.setattr("zymi_tui.events.chain_split.usable_cores", lambda: 2)
        seam = seam_of(con.execute("SELECT max(id) FROM events").fetchone()[0])
    assert seam is not None
    return seam


def seam_rows(db: Path) -> tuple[str, int, int, int]:
    """(stream, sequence, id of the earlier part's last row of it, id of the later part's first row of it) of
    the first stream that runs across the seam of a scan in two parts (ids up to `seam_of(max(id))`, then the rest)."""
    con = sqlite3.connect(db)
    seam = seam_at(con)
    for gid, stream, seq in con.execute(
        "SELECT id, stream_id, sequence FROM events WHERE id > ? ORDER BY id", (seam,)
    ).fetchall():
        before = con.execute(
            "SELECT id, sequence FROM events WHERE stream_id = ? AND id <= ? ORDER BY id DESC LIMIT 1", (stream, seam)
        ).fetchone()
        if before is not None and before[1] == seq - 1:
            first_later = con.execute(
                "SELECT min(id) FROM events WHERE stream_id = ? AND id > ?", (stream, seam)
            ).fetchone()[0]
            con.close()
            assert first_later == gid
            return stream, seq, before[0], gid
    raise AssertionError("no stream runs across the seam")


def rewrite_chain(con: sqlite3.Connection, stream: str) -> None:
    """Every hash of `stream` recomputed in sequence order, and its head set to the last: a chain that holds."""
    prev = ""
    seq = 0
    rows = con.execute(
        "SELECT id, event_id, sequence, data FROM events WHERE stream_id = ? ORDER BY sequence", (stream,)
    ).fetchall()
    for gid, event_id, seq, data in rows:
        h = v2(event_id, seq, data, prev)
        con.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE id = ?", (prev, h, gid))
        prev = h
    con.execute("UPDATE stream_heads SET last_sequence = ?, last_hash = ? WHERE stream_id = ?", (seq, prev, stream))


def tamper(db: Path, how: str) -> tuple[str, bool]:
    """Break the chain of the stream that runs across the seam, at the seam: (that stream, whether `zymi verify`
    finds it; it passes a chain rewritten over a removed row)."""
    stream, seq, last_earlier, first_later = seam_rows(db)
    if how in ("first row of the later part changed", "last row of the earlier part changed"):
        change_one_byte(db, first_later if how.startswith("first") else last_earlier)
        return stream, True
    con = sqlite3.connect(db)
    event_id, data = con.execute("SELECT event_id, data FROM events WHERE id = ?", (first_later,)).fetchone()
    if how == "link re-pointed at the seam":  # the row itself consistent: only the link to the earlier part is wrong
        other = con.execute(
            "SELECT hash FROM events WHERE stream_id = ? AND sequence = ?", (stream, seq - 2)
        ).fetchone()[0]
        con.execute(
            "UPDATE events SET prev_hash = ?, hash = ? WHERE id = ?",
            (other, v2(event_id, seq, data, other), first_later),
        )
    elif how == "row at the seam removed":
        con.execute("DELETE FROM events WHERE id = ?", (first_later,))
    elif how == "chain rewritten over a row removed at the seam":
        con.execute("DELETE FROM events WHERE id = ?", (first_later,))
        rewrite_chain(con, stream)
    elif how == "stream started again at the seam":
        con.execute(
            "UPDATE events SET sequence = 1, prev_hash = '', hash = ? WHERE id = ?",
            (v2(event_id, 1, data, ""), first_later),
        )
    else:
        raise AssertionError(how)
    con.commit()
    con.close()
    return stream, how != "chain rewritten over a row removed at the seam"


async def verdicts(db: Path) -> dict[str, tuple[str | None, int | None, int]]:
    async with await SqliteReader.open(db) as reader:
        return {v.stream_id: (v.problem, v.bad_sequence, v.verified) for v in (await verify_store(reader)).verdicts}


HOW = [
    "first row of the later part changed",
    "last row of the earlier part changed",
    "link re-pointed at the seam",
    "row at the seam removed",
    "chain rewritten over a row removed at the seam",
    "stream started again at the seam",
]


async def test_a_whole_store_scanned_in_two_parts_verifies_as_in_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    monkeypatch.setenv("ZYMI_TUI_SPLIT_IDS", "1")
    async with await SqliteReader.open(db) as reader:
        scan = await reader.scan_chains(await reader.stream_heads())
        assert isinstance(scan, JoinedScan) and scan.rows_read == 359  # (it was split)
    in_two = await verdicts(db)
    monkeypatch.setenv("ZYMI_TUI_SPLIT_IDS", str(10**9))
    assert in_two == await verdicts(db)
    assert all(problem is None for problem, _, _ in in_two.values()) and sum(n for *_, n in in_two.values()) == 359


@pytest.mark.parametrize("how", HOW)
async def test_a_chain_broken_at_the_seam_is_found_as_in_one_scan(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    stream, _ = tamper(db, how)
    monkeypatch.setenv("ZYMI_TUI_SPLIT_IDS", "1")
    in_two = await verdicts(db)
    monkeypatch.setenv("ZYMI_TUI_SPLIT_IDS", str(10**9))
    in_one = await verdicts(db)
    assert [s for s, (problem, *_) in in_one.items() if problem] == [stream]  # (the tampering breaks that stream)
    assert in_two == in_one


@requires_zymi
@pytest.mark.parametrize("how", [h for h in HOW if h != "chain rewritten over a row removed at the seam"])
async def test_zymi_finds_the_same_stream_broken_at_the_seam(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    stream, _ = tamper(db, how)
    monkeypatch.setenv("ZYMI_TUI_SPLIT_IDS", "1")
    ours = [s for s, (problem, *_) in (await verdicts(db)).items() if problem]
    run = zymi_verify(db)
    theirs = [line for line in run.stdout.splitlines() if "FAILED" in line]
    assert run.returncode != 0 and len(theirs) == 1 and f"{stream}: FAILED" in theirs[0], run.stdout + run.stderr
    assert ours == [stream]


@requires_zymi
async def test_a_stream_met_after_the_seam_without_its_first_row_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The later part takes such a stream up from its first row's link, which no earlier row backs."""
    db = copy_store(oracle_db("memory"), tmp_path)
    con = sqlite3.connect(db)
    seam = seam_at(con)
    stream, first = con.execute(
        "SELECT stream_id, min(id) FROM events GROUP BY stream_id HAVING min(id) > ? AND count(*) > 1", (seam,)
    ).fetchone()
    con.execute("DELETE FROM events WHERE id = ?", (first,))
    con.commit()
    con.close()
    monkeypatch.setenv("ZYMI_TUI_SPLIT_IDS", "1")
    in_two = await verdicts(db)
    monkeypatch.setenv("ZYMI_TUI_SPLIT_IDS", str(10**9))
    assert in_two == await verdicts(db)
    assert [s for s, (problem, *_) in in_two.items() if problem] == [stream]
    run = zymi_verify(db)
    assert run.returncode != 0 and f"{stream}: FAILED" in run.stdout, run.stdout + run.stderr


@requires_zymi
async def test_a_row_appended_after_the_heads_were_read_is_not_a_tampering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer's append between the heads read and the scan moves the heads' stamp: the heads are read again
    (not taken as they were first read, which would name the new row as appended past its head)."""
    from zymi_tui.events.kinds import Event, LlmCallStarted
    from zymi_tui.events.sqlite_write import SqliteWriter

    db = copy_store(oracle_db("chat_profile"), tmp_path)
    stream = "chat-7"
    real_scan = SqliteReader.scan_chains

    async def scan_after_an_append(self: SqliteReader, heads: dict[str, tuple[int, str]], **kw: bool) -> object:
        writer = await SqliteWriter.open(db)
        kind = LlmCallStarted(iteration=1, message_count=1, approx_context_chars=1)
        await writer.append(Event.new(stream, kind, "w"))
        await writer.close()
        return await real_scan(self, heads, **kw)

    monkeypatch.setattr(SqliteReader, "scan_chains", scan_after_an_append)
    got = await verdicts(db)
    assert all(problem is None for problem, _, _ in got.values()), got
    assert got[stream][2] == 21  # the appended row was read and verified
    assert zymi_verify(db).returncode == 0  # and the store is whole


_FORKS = """
import asyncio, json, sys
from zymi_tui.events import chain_split
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_schema import LOCK_WAIT_S
from zymi_tui.events.verify import verify_store

chain_split.usable_cores = lambda: 2
events = {"fork": 0, "spawn": 0}

def hook(event, args):
    if event == "os.fork":
        events["fork"] += 1
    elif event in ("subprocess.Popen", "os.posix_spawn", "os.exec"):
        events["spawn"] += 1

sys.addaudithook(hook)

async def main():
    async with await SqliteReader.open(sys.argv[1]) as reader:
        report = await verify_store(reader)
        verdicts = {v.stream_id: [v.problem, v.bad_sequence, v.verified] for v in report.verdicts}
    return verdicts

verdicts = asyncio.run(main())
print(json.dumps({"events": events, "verdicts": verdicts}))
"""


def _verify_in_a_process(db: Path) -> dict[str, Any]:
    env = {**os.environ, "ZYMI_TUI_SPLIT_IDS": "1"}
    run = subprocess.run(
        [sys.executable, "-c", _FORKS, str(db)], capture_output=True, text=True, timeout=300, env=env, check=True
    )
    got: dict[str, Any] = json.loads(run.stdout)
    return got


def test_the_later_part_is_a_fork_that_finds_a_row_changed_after_the_seam(tmp_path: Path) -> None:
    """The later part is a child forked from the check (it holds the heads and the modules already: no interpreter
    started, no heads sent), and a row changed after the seam is found there, at its sequence. The answer key: the
    changed row's own sequence, read with sqlite3. On main: one process spawned, none forked."""
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    con = sqlite3.connect(db)
    seam = seam_at(con)
    gid, stream, seq = con.execute(
        "SELECT id, stream_id, sequence FROM events WHERE id > ? ORDER BY id LIMIT 1 OFFSET 40", (seam,)
    ).fetchone()
    con.close()
    change_one_byte(db, gid)
    got = _verify_in_a_process(db)
    assert got["events"] == {"fork": 1, "spawn": 0}
    broken = {s: v for s, v in got["verdicts"].items() if v[0] is not None}
    assert list(broken) == [stream] and broken[stream][1] == seq, broken


def test_the_later_part_ends_when_its_starter_dies(tmp_path: Path) -> None:
    """A starter that dies (killed: no `stop`) leaves no later part behind: the child, waiting on a store another
    connection holds locked, ends at once rather than after its lock wait and scan."""
    db = copy_store(oracle_db("chat_profile"), tmp_path)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")
    holder.execute("BEGIN EXCLUSIVE")  # (the child's first read waits up to LOCK_WAIT_S for it)
    script = (
        "import os, signal, sys\n"
        "from zymi_tui.events.chain_heads import Heads\n"
        "from zymi_tui.events.chain_split import LaterPart\n"
        "part = LaterPart(sys.argv[1], Heads(), 179, 359, True)\n"
        "print(part.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    try:
        with (tmp_path / "pid").open("w+") as out:  # (a file: the child, holding a pipe open, would be waited for)
            run = subprocess.run([sys.executable, "-c", script, db.as_uri()], stdout=out, timeout=60)
            out.seek(0)
            child = int(out.read())
        assert run.returncode == -signal.SIGKILL
        deadline = time.monotonic() + LOCK_WAIT_S * 0.6
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the later part outlived its starter"
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_one_usable_core_scans_in_one_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZYMI_TUI_SPLIT_IDS", "1")
    monkeypatch.setattr("zymi_tui.events.chain_split.usable_cores", lambda: 1)
    assert seam_of(1_000_000) is None
    monkeypatch.setattr("zymi_tui.events.chain_split.usable_cores", lambda: 2)
    assert seam_of(1_000_000) == 400_000
