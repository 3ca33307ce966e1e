"""`export --format lhar` of a store of one conversation on two processes (commands/lhar_later.py), seen
from the outside: real processes, the partner a real child. Whatever the output (a folder, a file,
stdout), its bytes, stderr and the exit status must be what one process gives (the oracle: the same
command with pairing off, main's code path), and the partner's entries must have been taken (a probe
notes it) only when it read every row; where a row cannot be decoded the caller goes on itself. A
partner whose caller is gone stops."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ORACLE, noting_cli
from tests.test_lhar_pair import tree

ROOT = Path(__file__).parent.parent
STORES = {"coding_compaction": ORACLE / "coding_compaction", "coding_long": ROOT / "sample_stores" / "coding_long"}
# the CLI in a process of its own, each time the caller takes the partner's entries noted in a file
PROBE = noting_cli(
    "lhar_later", "LaterEntries.take_into", "{self.after} {os.readlink(f'/proc/self/fd/{self.out.fileno()}')}"
)


def export(db: Path, out: Path, paired: bool, form: str, *extra: str) -> tuple[object, bytes, str, int, list[str]]:
    """(what was written: a folder's files or a file's bytes, stdout, stderr with `out` made neutral,
    status, each take of the partner's entries: its cut and where its file was)."""
    marks = out.with_suffix(".taken")
    env = {**os.environ, "ZYMI_TUI_LHAR_PAIR_EVENTS": "1" if paired else "1000000000"}
    target = {"folder": ["-o", f"{out}/"], "file": ["-o", str(out)], "stdout": []}[form]
    argv = [sys.executable, "-c", PROBE, str(marks), "export", str(db), "--format", "lhar", *target, *extra]
    proc = subprocess.run(argv, capture_output=True, env=env, cwd=ROOT, timeout=300)
    taken = marks.read_text().splitlines() if marks.exists() else []
    err = proc.stderr.decode().replace(str(out.resolve()), "OUT")
    written = tree(out) if out.is_dir() else out.read_bytes() if out.exists() else None
    return written, proc.stdout, err, proc.returncode, taken


def _copy(name: str, tmp_path: Path) -> Path:
    db = tmp_path / "events.db"
    db.write_bytes((STORES[name] / "events.db").read_bytes())
    return db


@pytest.mark.parametrize("form", ["folder", "file", "stdout"])
@pytest.mark.parametrize("name", list(STORES))
@pytest.mark.parametrize("with_project", [True, False], ids=["project", "bare"])
def test_two_processes_write_what_one_writes(name: str, form: str, with_project: bool, tmp_path: Path) -> None:
    db = _copy(name, tmp_path)
    extra = ("--project", str(STORES[name] / "project")) if with_project else ()
    one = export(db, tmp_path / "one", False, form, *extra)
    two = export(db, tmp_path / "two", True, form, *extra)
    assert one[3] == 0 and one[4] == []
    assert two[:4] == one[:4]
    entries = (one[1] if form == "stdout" else one[0] if form == "file" else b"").count(b'"type": "entry"')
    assert form == "folder" or entries > 10
    assert len(two[4]) == 1  # the partner's entries were taken
    # from a file beside the output (not in $TMPDIR, which may be memory): one of no name, "#N (deleted)"
    folder = {"folder": tmp_path / "two", "file": tmp_path, "stdout": None}[form]
    if folder is not None:
        assert two[4][0].split(" ", 1)[1].startswith(f"{folder}/"), two[4]


def test_the_caller_goes_on_past_an_unreadable_row(tmp_path: Path) -> None:
    """A row after the cut that cannot be decoded: the partner declines, the caller exports it all and
    names the row once, as one process does."""
    db = _copy("coding_long", tmp_path)
    con = sqlite3.connect(db)
    top = con.execute("SELECT max(id) FROM events").fetchone()[0]
    (gid,) = con.execute(
        "SELECT min(id) FROM events WHERE kind_tag = 'tool_call_completed' AND id > ?", (top * 0.8,)
    ).fetchone()
    con.execute("UPDATE events SET data = '{' WHERE id = ?", (gid,))
    con.commit()
    con.close()
    one = export(db, tmp_path / "one", False, "file")
    two = export(db, tmp_path / "two", True, "file")
    assert two[:4] == one[:4]
    assert "skipped" in one[2] or "unreadable" in one[2] or str(gid) in one[2]
    assert two[4] == []


def test_a_partner_whose_caller_is_gone_stops(tmp_path: Path) -> None:
    """A partner whose parent is not the caller it names (the caller was killed) stops at its first look
    (status 4, ORPHANED); under its caller it writes the entries after the cut."""
    db = _copy("coding_long", tmp_path)
    top = sqlite3.connect(db).execute("SELECT max(id) FROM events").fetchone()[0]

    def partner(caller: int) -> tuple[int, bytes]:
        out = tmp_path / f"out_{caller}"
        with out.open("wb") as f:
            fd = f.fileno()
            argv = [sys.executable, "-m", "zymi_tui.commands.lhar_later", str(db), "", "1", str(top), str(fd)]
            code = subprocess.run([*argv, str(caller)], pass_fds=(fd,), cwd=ROOT, timeout=120).returncode
        return code, out.read_bytes()

    code, lines = partner(os.getpid())  # (this test's process is its parent)
    one = export(db, tmp_path / "one", False, "file")[0]
    assert code == 0 and isinstance(one, bytes)
    assert lines and one.endswith(lines) and lines.count(b"\n") == one.count(b"\n") - 1  # all but the session line
    code, lines = partner(1)
    assert code == 4
