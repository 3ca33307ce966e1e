"""`zymi-tui events / runs / verify`: the same answers as the real zymi, and bad input handled well."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.waiting import LIMIT
from zymi_tui.cli import main
from zymi_tui.events import sqlite_read as backend
from zymi_tui.events.kinds import Event, LlmCallStarted
from zymi_tui.events.sqlite_write import SqliteWriter

from .conftest import (
    SCENARIOS,
    oracle_db,
    requires_zymi,
    sha256,
    snapshot_dir,
    zymi_bin,
    zymi_tui_bin,
)


def project_with(scenario: str, root: Path) -> Path:
    """A project folder holding a byte copy of an oracle store at .zymi/events.db."""
    (root / ".zymi").mkdir(parents=True)
    shutil.copyfile(oracle_db(scenario), root / ".zymi" / "events.db")
    return root


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def zymi(*args: str) -> str:
    bin_ = zymi_bin()
    assert bin_
    done = subprocess.run([bin_, *args], capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0, done.stderr
    return done.stdout


@requires_zymi
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_raw_output_is_the_real_engines(scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ours = project_with(scenario, tmp_path / "ours")
    theirs = project_with(scenario, tmp_path / "theirs")  # zymi writes to what it opens: its own copy
    code, out, err = run_cli(capsys, "events", str(ours), "--raw", "--all")
    assert (code, err) == (0, "")
    assert out == zymi("events", "-d", str(theirs), "--raw", "--limit", "100000")
    code, out, err = run_cli(capsys, "runs", str(ours), "--raw")
    assert (code, err) == (0, "")
    assert out == zymi("runs", "-d", str(theirs), "--raw")


@requires_zymi
def test_stream_and_kind_filters_match_the_real_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ours = project_with("coding_compaction", tmp_path / "ours")
    theirs = project_with("coding_compaction", tmp_path / "theirs")
    con = sqlite3.connect(ours / ".zymi" / "events.db")
    run = con.execute("SELECT stream_id FROM events WHERE kind_tag = 'pipeline_requested'").fetchone()[0]
    con.close()
    for extra in (["--stream", run], ["--kind", "context_compacted"], ["--stream", run, "--kind", "llm_call_started"]):
        code, out, _ = run_cli(capsys, "events", str(ours), "--raw", "--limit", "100000", *extra)
        assert code == 0
        expected = zymi("events", "-d", str(theirs), "--raw", "--limit", "100000", *extra)
        assert out == expected and out.count("\n") > 1, extra
    # zymi applies --limit before --kind when no --stream is given (the kind among the first N
    # events); ours gives the first N events of that kind: the head of zymi's unlimited answer.
    code, out, _ = run_cli(capsys, "events", str(ours), "--raw", "--limit", "7", "--kind", "LlmCallStarted")
    every = zymi("events", "-d", str(theirs), "--raw", "--limit", "100000", "--kind", "llm_call_started")
    assert out.splitlines() == every.splitlines()[:7]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_human_output_lists_every_event(scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = project_with(scenario, tmp_path) / ".zymi" / "events.db"
    total = sqlite3.connect(db).execute("SELECT count(*) FROM events").fetchone()[0]
    code, out, err = run_cli(capsys, "events", str(db), "--all")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"{db}: {total} event(s); all streams"
    assert len(out.splitlines()) == total + 1
    runs = (
        sqlite3.connect(db)
        .execute("SELECT COUNT(DISTINCT stream_id) FROM events WHERE kind_tag = 'pipeline_requested'")
        .fetchone()[0]
    )
    code, out, err = run_cli(capsys, "runs", str(tmp_path))
    assert (code, err) == (0, "")
    assert out.splitlines()[0].split()[:2] == ["status", "stream"]
    assert len(out.splitlines()) == runs + 1


def test_store_defaults_to_the_current_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project_with("memory", tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "verify")
    assert code == 0 and "Verified 60 event(s) across 3 stream(s)." in out


def test_verify_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = project_with("fresh_mode", tmp_path) / ".zymi" / "events.db"
    code, out, _ = run_cli(capsys, "verify", str(db))
    assert code == 0 and "Verified" in out
    con = sqlite3.connect(db)
    gid, stream, seq = con.execute(
        "SELECT id, stream_id, sequence FROM events WHERE kind_tag = 'tool_call_completed' LIMIT 1"
    ).fetchone()
    con.execute(
        "UPDATE events SET data = replace(data, '\"is_error\":false', '\"is_error\":true') WHERE id = ?", (gid,)
    )
    con.commit()
    con.close()
    code, out, err = run_cli(capsys, "verify", str(db))
    assert code == 1
    assert f"{stream}: BROKEN at sequence {seq}" in out
    assert "verification failed: 1 of" in err
    code, out, _ = run_cli(capsys, "verify", str(db), "--stream", stream)
    assert code == 1 and f"sequence {seq}" in out
    code, _, err = run_cli(capsys, "verify", str(db), "--stream", "no-such-stream")
    assert code == 2 and "no stream `no-such-stream`" in err


def _damage_truncate(p: Path) -> None:
    p.write_bytes(oracle_db("coding_default").read_bytes()[:40_000])


def _no_events_table(p: Path) -> None:
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE notes (a)")
    con.commit()
    con.close()


BAD_STORES: dict[str, tuple[Callable[[Path], object], str]] = {
    "missing": (lambda p: None, "no event store at"),
    "empty file": (lambda p: p.write_bytes(b""), "is empty"),
    "not sqlite": (lambda p: p.write_text("id,stream\n1,a\n"), "is not a SQLite database"),
    "no events table": (_no_events_table, "has no `events` table"),
    "truncated": (_damage_truncate, "is damaged"),
}


@pytest.mark.parametrize("case", sorted(BAD_STORES))
@pytest.mark.parametrize("command", ["events", "runs", "verify"])
def test_bad_store_is_one_clear_line_and_exit_2(
    case: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, says = BAD_STORES[case]
    target = tmp_path / "events.db"
    make(target)
    before = snapshot_dir(tmp_path)
    code, out, err = run_cli(capsys, command, str(target))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("zymi-tui: error:"), err
    assert says in err and str(target) in err
    assert "Traceback" not in err + out
    assert snapshot_dir(tmp_path) == before


def test_folder_without_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "events", str(tmp_path))
    assert code == 2 and f"expected {tmp_path / '.zymi' / 'events.db'}" in err
    assert list(tmp_path.iterdir()) == []


def test_unknown_kind_option_lists_the_known_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project_with("memory", tmp_path)
    code, _, err = run_cli(capsys, "events", str(tmp_path), "--kind", "bogus")
    assert code == 2 and "unknown kind `bogus`" in err and "llm_call_started" in err


def test_locked_store_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "LOCK_WAIT_S", 0.3)
    db = project_with("memory", tmp_path) / ".zymi" / "events.db"
    before = sha256(db)
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("PRAGMA locking_mode=EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    try:
        code, _, err = run_cli(capsys, "events", str(db))  # returns once LOCK_WAIT_S is spent
    finally:
        locker.close()
    assert code == 2
    assert err.count("\n") == 1 and f"{db} is locked by another process" in err
    assert sha256(db) == before


def test_bad_rows_are_warned_about_and_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = project_with("memory", tmp_path) / ".zymi" / "events.db"
    con = sqlite3.connect(db)
    con.execute("UPDATE events SET data = substr(data, 1, 30) WHERE id = 4")
    con.execute(
        'UPDATE events SET data = replace(data, \'"type":"WorkflowStarted"\', \'"type":"NewIn099"\') '
        "WHERE kind_tag = 'workflow_started'"
    )
    con.commit()
    con.close()
    before = sha256(db)
    code, out, err = run_cli(capsys, "events", str(db), "--all")
    assert code == 0
    assert err.count("\n") == 1
    assert f"{db}: skipped unreadable row 4 " in err and "invalid JSON" in err
    assert "Unknown: NewIn099" in out  # shown, not fatal
    assert len(out.splitlines()) == 1 + 59
    code, out, err = run_cli(capsys, "events", str(db), "--all", "--raw")
    assert code == 0 and len(out.splitlines()) == 59 and '"type":"NewIn099"' in out
    code, out, err = run_cli(capsys, "runs", str(db), "--raw")
    assert code == 0 and '"status":"ok"' in out
    assert sha256(db) == before


@pytest.mark.parametrize("command", ["events", "runs", "verify"])
def test_help_explains_store_and_options(command: str) -> None:
    done = subprocess.run([zymi_tui_bin(), command, "--help"], capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0
    assert "STORE" in done.stdout and "project folder" in done.stdout
    assert "--raw" in done.stdout or command == "verify"


def test_follow_prints_events_another_process_appends(tmp_path: Path) -> None:
    db = tmp_path / "events.db"

    async def append(n: int, start: int) -> list[str]:
        async with await SqliteWriter.open(db) as w:
            return [
                (
                    await w.append(
                        Event.new("s", LlmCallStarted(iteration=i, message_count=1, approx_context_chars=0), "t")
                    )
                ).event.id
                for i in range(start, start + n)
            ]

    first = asyncio.run(append(3, 0))
    proc = subprocess.Popen(
        [zymi_tui_bin(), "events", str(db), "--follow", "--raw", "--poll-ms", "20", "--limit", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert first[-1] in proc.stdout.readline()  # like tail -f: the newest event first
        time.sleep(0.5)
        later = asyncio.run(append(5, 3))
        lines = [proc.stdout.readline() for _ in later]
    finally:
        proc.terminate()
        proc.wait(timeout=LIMIT)
    assert [later_id in line for later_id, line in zip(later, lines, strict=True)] == [True] * 5


def test_entry_point_runs_without_the_package_on_path(tmp_path: Path) -> None:
    project_with("hard_cap", tmp_path)
    done = subprocess.run(
        [zymi_tui_bin(), "runs", str(tmp_path), "--raw"], capture_output=True, text=True, timeout=LIMIT
    )
    assert done.returncode == 0 and '"status":"FAIL"' in done.stdout
    done = subprocess.run([sys.executable, "-m", "zymi_tui", "--help"], capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0 and "events" in done.stdout


def _column_ns(ts: str) -> int:
    """The `timestamp` column (`...T15:43:57.909147618+00:00`) in ns, parsed here, not by the package."""
    whole, frac = ts[:19], ts[20:29]
    return int(datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()) * 10**9 + int(frac)


def test_turns_pair_each_chat_request_with_its_own_completion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`zymi serve` puts many runs on one chat stream; zymi shows it as one run, --turns as one per turn."""
    db = project_with("chat_profile", tmp_path) / ".zymi" / "events.db"
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT stream_id, kind_tag, correlation_id, timestamp FROM events "
        "WHERE kind_tag IN ('pipeline_requested', 'pipeline_completed') ORDER BY id"
    ).fetchall()
    done = {corr: ts for _, tag, corr, ts in rows if tag == "pipeline_completed"}
    expected, turns = [], {}
    for stream, tag, corr, ts in rows:
        if tag == "pipeline_requested":
            turns[stream] = turns.get(stream, 0) + 1
            duration = (_column_ns(done[corr]) - _column_ns(ts)) // 1_000_000
            expected.append((stream, turns[stream], corr, ts, duration))
    assert len(expected) > len(turns) > 1  # several turns on one stream, several streams
    code, out, _ = run_cli(capsys, "runs", str(db), "--turns", "--raw")
    assert code == 0
    got = [json.loads(line) for line in out.splitlines()]
    assert [(r["stream_id"], r["turn"], r["correlation_id"], r["started_at"], r["duration_ms"]) for r in got] == list(
        reversed(expected)
    )
    code, out, _ = run_cli(capsys, "runs", str(db), "--raw")
    assert [json.loads(line)["stream_id"] for line in out.splitlines()] == ["chat-7", "chat-42"]
