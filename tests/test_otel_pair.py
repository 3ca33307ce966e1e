"""`export --format otel` on two processes (commands/otel_pair.py), seen from the outside: real processes,
the partner a real child. A store of six runs one after another is cut between its third and fourth; the
output must be the bytes one process writes (the oracle: the same command with pairing off, whose text
tests/test_export_golden.py holds to main's digests), and the warnings the same. Where the first part
leaves something open at the cut (a run with no end, a call with no completion), or the partner reads a
row it cannot decode, the caller must go on itself: the partner's spans are not taken."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ORACLE, cloned_runs, noting_cli

ROOT = Path(__file__).parent.parent
PROJECT = ORACLE / "coding_compaction" / "project"
# the CLI in a process of its own, each time the caller takes the partner's spans noted in a file
PROBE = noting_cli("otel_pair", "SpansPartner.write_to", "{self.after}")


def _run_stream(db: Path, clone: int) -> str:
    con = sqlite3.connect(db)
    streams = [r[0] for r in con.execute("SELECT DISTINCT stream_id FROM events ORDER BY id")]
    con.close()
    return next(s for s in streams if s.startswith(f"pipeline-main-{clone}-") and "/" not in s)


def _delete_first(db: Path, clone: int, kind: str) -> None:
    """Delete the first `kind` event of clone `clone`'s run and steps."""
    con = sqlite3.connect(db)
    prefix = _run_stream(db, clone)
    (gid,) = con.execute(
        "SELECT min(id) FROM events WHERE kind_tag = ? AND stream_id LIKE ?", (kind, prefix + "%")
    ).fetchone()
    assert gid is not None
    con.execute("DELETE FROM events WHERE id = ?", (gid,))
    con.commit()
    con.close()


def _spoil_row(db: Path, clone: int) -> None:
    """Clone `clone`'s first tool result no longer JSON (an unreadable row the replay skips and names)."""
    con = sqlite3.connect(db)
    prefix = _run_stream(db, clone)
    (gid,) = con.execute(
        "SELECT min(id) FROM events WHERE kind_tag = 'tool_call_completed' AND stream_id LIKE ?", (prefix + "%",)
    ).fetchone()
    con.execute("UPDATE events SET data = '{' WHERE id = ?", (gid,))
    con.commit()
    con.close()


STORES = {
    "clean": None,
    "a run with no end before the cut": lambda db: _delete_first(db, 1, "pipeline_completed"),
    "a call with no completion before the cut": lambda db: _delete_first(db, 2, "llm_call_completed"),
    "an unreadable row after the cut": lambda db: _spoil_row(db, 4),
}


def export(db: Path, out: Path, paired: bool, *extra: str) -> tuple[bytes, str, list[str]]:
    """(the OTLP/JSON written, stderr less its last line naming the file, the cuts whose partner spans were taken)."""
    marks = out.with_suffix(".taken")
    env = {**os.environ, "ZYMI_TUI_OTEL_PAIR_EVENTS": "1" if paired else "1000000000"}
    argv = [sys.executable, "-c", PROBE, str(marks), "export", str(db), "--format", "otel", "-o", str(out), *extra]
    proc = subprocess.run(argv, capture_output=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    err = proc.stderr.decode().splitlines()
    assert err and err[-1].startswith("wrote ")
    taken = marks.read_text().split() if marks.exists() else []
    return out.read_bytes(), "\n".join(err[:-1]), taken


@pytest.fixture(scope="module")
def six_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cloned_runs(tmp_path_factory.mktemp("otel_pair"), 6, "coding_compaction")


def _store(six_runs: Path, name: str, tmp_path: Path) -> Path:
    db = tmp_path / "runs.db"
    db.write_bytes(six_runs.read_bytes())
    spoil = STORES[name]
    if spoil is not None:
        spoil(db)
    return db


@pytest.mark.parametrize("name", list(STORES))
@pytest.mark.parametrize("extra", [("--project", str(PROJECT)), ("--no-content",)], ids=["project", "bare"])
def test_two_processes_write_what_one_writes(six_runs: Path, name: str, extra: tuple[str, ...], tmp_path: Path) -> None:
    db = _store(six_runs, name, tmp_path)
    one, one_err, one_taken = export(db, tmp_path / "one.json", False, *extra)
    two, two_err, two_taken = export(db, tmp_path / "two.json", True, *extra)
    assert one_taken == []
    assert two == one
    assert two_err == one_err
    # the partner's part is taken at the cut only when nothing is open there and it read every row
    assert len(two_taken) == (1 if name == "clean" else 0)
    lines = [json.loads(line) for line in one.splitlines()]
    spans = sum(len(s["spans"]) for line in lines for r in line["resourceSpans"] for s in r["scopeSpans"])
    assert spans > 6 * 20  # (six runs' calls, tools, steps and runs)


def test_the_cut_is_between_runs(six_runs: Path, tmp_path: Path) -> None:
    """The partner starts after the third run ends: every event of the first three runs is at or before it."""
    db = _store(six_runs, "clean", tmp_path)
    _, _, taken = export(db, tmp_path / "two.json", True, "--no-content")
    assert between_third_and_fourth(db, int(taken[0]))


def between_third_and_fourth(db: Path, cut: int) -> bool:
    """Whether global id `cut` is at or after the third run's last event and before the fourth's first."""
    con = sqlite3.connect(db)
    last_of_third = con.execute(
        "SELECT max(id) FROM events WHERE stream_id LIKE ?", (_run_stream(db, 2) + "%",)
    ).fetchone()[0]
    first_of_fourth = con.execute(
        "SELECT min(id) FROM events WHERE stream_id LIKE ?", (_run_stream(db, 3) + "%",)
    ).fetchone()[0]
    con.close()
    return bool(last_of_third <= cut < first_of_fourth)


def test_a_partner_whose_caller_is_gone_stops(six_runs: Path, tmp_path: Path) -> None:
    """A partner whose parent is not the caller it names (the caller was killed: it was handed to another
    parent) stops at its first look and writes next to nothing; under its caller it writes its part."""
    db = _store(six_runs, "clean", tmp_path)
    _, _, taken = export(db, tmp_path / "two.json", True, "--no-content")
    top = sqlite3.connect(db).execute("SELECT max(id) FROM events").fetchone()[0]

    def partner(caller: int) -> tuple[int, int]:
        out = tmp_path / f"spans_{caller}"
        with out.open("wb") as f:
            fd = f.fileno()
            argv = [sys.executable, "-m", "zymi_tui.commands.otel_pair", str(db), "", taken[0], str(top), "0", str(fd)]
            code = subprocess.run([*argv, str(caller)], pass_fds=(fd,), cwd=ROOT, timeout=120).returncode
        return code, len(out.read_bytes().splitlines())

    code, spans = partner(os.getpid())  # (this test's process is its parent)
    assert code == 0 and spans > 3 * 20
    code, spans = partner(os.getpid() + 1_000_000)  # a caller that is not its parent
    assert code == 4 and spans <= 3
