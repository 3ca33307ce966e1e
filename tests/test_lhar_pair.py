"""`export --format lhar -o FOLDER` on two processes (commands/lhar_pair.py), seen from the outside: real
processes, the partner a real child. A store of six runs one after another is cut between its third and
fourth; every file of the folder, stdout, stderr and the exit status must be what one process gives
(the oracle: the same command with pairing off, which is main's code path), and the partner's files must
have been taken (a probe notes it) only when nothing is open at the cut and it read every row. Where a
run is open at the cut, a call has no completion, or a row after the cut cannot be decoded, the caller
must go on itself. A partner whose caller is gone stops."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ORACLE, cloned_runs, noting_cli
from tests.test_otel_pair import STORES, _store, between_third_and_fourth
from zymi_tui.commands.export_pair import pair_cut
from zymi_tui.commands.lhar_pair import PAIR_EVENTS_ENV
from zymi_tui.events.store import StreamInfo

ROOT = Path(__file__).parent.parent
PROJECT = ORACLE / "coding_compaction" / "project"
# the CLI in a process of its own, each time the caller takes the partner's files noted in a file
PROBE = noting_cli("lhar_pair", "FilesPartner.move_into", "{self.after}")


def tree(folder: Path) -> dict[str, str]:
    """Every entry under `folder` (hidden ones too), a file by its bytes' sha256."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def export(db: Path, folder: Path, paired: bool, *extra: str) -> tuple[dict[str, str], bytes, str, int, list[str]]:
    """(the folder's files, stdout, stderr with the folder's name made neutral, status, the cuts taken)."""
    marks = folder.with_suffix(".taken")
    env = {**os.environ, "ZYMI_TUI_LHAR_PAIR_EVENTS": "1" if paired else "1000000000"}
    argv = [sys.executable, "-c", PROBE, str(marks), "export", str(db), "--format", "lhar", "-o", f"{folder}/"]
    proc = subprocess.run([*argv, *extra], capture_output=True, env=env, cwd=ROOT, timeout=300)
    taken = marks.read_text().split() if marks.exists() else []
    err = proc.stderr.decode().replace(str(folder.resolve()), "FOLDER")
    return tree(folder), proc.stdout, err, proc.returncode, taken


@pytest.fixture(scope="module")
def six_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cloned_runs(tmp_path_factory.mktemp("lhar_pair"), 6, "coding_compaction")


@pytest.mark.parametrize("name", list(STORES))
@pytest.mark.parametrize("extra", [("--project", str(PROJECT)), ()], ids=["project", "bare"])
def test_two_processes_write_what_one_writes(six_runs: Path, name: str, extra: tuple[str, ...], tmp_path: Path) -> None:
    db = _store(six_runs, name, tmp_path)
    one = export(db, tmp_path / "one", False, *extra)
    two = export(db, tmp_path / "two", True, *extra)
    assert one[4] == []
    assert two[:4] == one[:4]
    assert one[3] == 0 and len(one[0]) == 6  # a session file per run, and no hidden folder left
    assert "wrote 6 session file(s)" in one[2]
    # the partner's part is taken at the cut only when nothing is open there and it read every row
    assert len(two[4]) == (1 if name == "clean" else 0)


def test_over_the_files_of_an_earlier_export(six_runs: Path, tmp_path: Path) -> None:
    """Into a folder holding an earlier export's files (and one of another name), the files are replaced."""
    db = _store(six_runs, "clean", tmp_path)
    one = export(db, tmp_path / "one", False)
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir(exist_ok=True)
        for f in [*(tmp_path / "one").iterdir(), tmp_path / "one" / "other.lhar"]:
            (tmp_path / folder / f.name).write_text("stale\n")
    again = export(db, tmp_path / "one", False)
    two = export(db, tmp_path / "two", True)
    assert two[:4] == again[:4]
    assert again[0]["other.lhar"] == hashlib.sha256(b"stale\n").hexdigest()
    assert {k: v for k, v in again[0].items() if k != "other.lhar"} == one[0]
    assert len(two[4]) == 1


def test_a_file_that_a_move_would_not_leave_alike_keeps_one_process(six_runs: Path, tmp_path: Path) -> None:
    """A later session's file of another mode is written in place by one process, and keeps its mode."""
    db = _store(six_runs, "clean", tmp_path)
    one = export(db, tmp_path / "one", False)
    last = sorted((tmp_path / "one").iterdir())[-1].name
    folder = tmp_path / "two"
    folder.mkdir()
    (folder / last).write_text("stale\n")
    (folder / last).chmod(0o600)
    two = export(db, folder, True)
    assert two[:4] == one[:4]
    assert two[4] == []
    assert (folder / last).stat().st_mode & 0o777 == 0o600


def test_the_cut_is_between_runs(six_runs: Path, tmp_path: Path) -> None:
    """The partner starts after the third run ends: every event of the first three runs is at or before it."""
    db = _store(six_runs, "clean", tmp_path)
    taken = export(db, tmp_path / "two", True)[4]
    assert between_third_and_fourth(db, int(taken[0]))


def test_a_partner_whose_caller_is_gone_stops(six_runs: Path, tmp_path: Path) -> None:
    """A partner whose parent is not the caller it names (the caller was killed: it was handed to another
    parent) stops at its first look and removes its folder; under its caller it writes the later three."""
    db = _store(six_runs, "clean", tmp_path)
    taken = export(db, tmp_path / "two", True)[4]
    top = sqlite3.connect(db).execute("SELECT max(id) FROM events").fetchone()[0]

    def partner(caller: int) -> tuple[int, list[str] | None, str]:
        parts = tmp_path / f"parts_{caller}"
        parts.mkdir()
        counts = tmp_path / f"counts_{caller}"
        with counts.open("wb") as f:
            fd = f.fileno()
            argv = [sys.executable, "-m", "zymi_tui.commands.lhar_pair", str(db), "", taken[0], str(top), str(parts)]
            code = subprocess.run([*argv, str(fd), str(caller)], pass_fds=(fd,), cwd=ROOT, timeout=120).returncode
        files = sorted(p.name for p in parts.iterdir()) if parts.exists() else None
        return code, files, counts.read_text()

    code, files, counts = partner(os.getpid())  # (this test's process is its parent)
    assert code == 0 and files is not None and len(files) == 3 and counts.split()[0] == "3"
    code, files, counts = partner(os.getpid() + 1_000_000)  # a caller that is not its parent
    assert code == 4 and files is None and counts == ""  # (its folder removed: no one will take it)


def test_the_cut_balances_the_work_the_caller_pays_beyond_its_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten streams of ten ids each (1-10, 11-20, ..., 91-100): without more the cut is after id 50; when
    each stream costs the caller ten ids' worth more (its file rewritten), after 30: the caller's three
    streams cost 30 + 30, the partner's seven 70 (after 40: 80 against 60)."""
    monkeypatch.setenv(PAIR_EVENTS_ENV, "1")
    streams = [StreamInfo(f"pipeline-main-{k}", 10, 10 * k + 1, 10 * k + 10) for k in range(10)]
    assert pair_cut(streams, PAIR_EVENTS_ENV) == (50, 100)
    every = {s.stream_id: 10 for s in streams}
    assert pair_cut(streams, PAIR_EVENTS_ENV, lambda: every) == (30, 100)
    later = {s.stream_id: 10 for s in streams[5:]}  # (the partner's streams: it is the caller that pays)
    assert pair_cut(streams, PAIR_EVENTS_ENV, lambda: later) == (50, 100)


def test_over_an_earlier_export_the_partner_takes_more(tmp_path: Path) -> None:
    """Fifty runs of 60 events: into a new folder the cut is after the 25th run; over that export's own
    files (the caller rewrites each of its part's, `REWRITE_EVENTS` ids' worth more: 3) after the 24th
    (1440 + 24 * 3 against 1560), and the folder is what one process leaves."""
    db = cloned_runs(tmp_path, 50, "memory")
    one = export(db, tmp_path / "one", False)
    again = export(db, tmp_path / "one", False)
    first = export(db, tmp_path / "two", True)
    second = export(db, tmp_path / "two", True)
    assert first[:4] == one[:4] and second[:4] == again[:4]
    assert first[4] == ["1500"]
    assert second[4] == ["1500", "1440"]  # (the cuts taken into "two", each export's)
