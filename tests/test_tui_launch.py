"""`zymi-tui observe` and bare `zymi-tui`: what opens, and one clear line when nothing can."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tui_support import scenario_copy
from tests.waiting import LIMIT
from zymi_tui.cli import main
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.store import StoreError
from zymi_tui.project.locate import find_project
from zymi_tui.tui.launch import choose_target, sample_store


def test_bare_launch_without_a_store_opens_the_sample_with_a_banner(tmp_path: Path) -> None:
    sample = sample_store()
    if sample is None:
        with pytest.raises(StoreError, match="sample store is not installed"):
            choose_target(None, None, cwd=tmp_path, bare=True)
        return
    target = choose_target(None, None, cwd=tmp_path, bare=True)
    assert target.store == sample.store
    assert target.banner is not None and "SAMPLE" in target.banner and "zymi-tui observe PATH" in target.banner


def test_bare_launch_in_a_project_folder_opens_its_store(tmp_path: Path) -> None:
    """zymi's layout: `<root>/project.yml` and `<root>/.zymi/events.db`."""
    db = scenario_copy("memory", tmp_path)
    root = db.parent / "project"
    (root / ".zymi").mkdir()
    db.rename(root / ".zymi" / "events.db")
    target = choose_target(None, None, cwd=root, bare=True)
    assert target.store == SqliteStore(root / ".zymi" / "events.db") and target.banner is None
    assert target.project == root


def test_a_zymi_folder_without_a_project_has_none(tmp_path: Path) -> None:
    (tmp_path / ".zymi").mkdir()
    sqlite3.connect(tmp_path / ".zymi" / "events.db").close()
    assert find_project(SqliteStore(tmp_path / ".zymi" / "events.db")) is None


def test_oracle_layout_finds_its_project(tmp_path: Path) -> None:
    db = scenario_copy("coding_default", tmp_path)
    target = choose_target(str(db), "some-run")
    assert target.project == db.parent / "project" and target.run == "some-run"


def test_missing_store_is_one_line_and_exit_2_before_any_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["observe", str(tmp_path / "nope.db"), "--no-venv"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "nope.db" in err and "Traceback" not in err


def test_not_a_database_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "events.db"
    bad.write_text("hello")
    assert main(["observe", "-d", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a SQLite database" in err


def test_observe_needs_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = scenario_copy("memory", tmp_path)
    assert main(["observe", str(db), "-r", "x"]) == 2  # pytest captures stdout: not a TTY
    assert "needs a terminal" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["not SQLite", "no events table"])
def test_a_broken_store_read_by_the_start_child_is_one_line(tmp_path: Path, kind: str) -> None:
    """`zymi-tui observe` as a person runs it has the newest runs read by a child process while the screen loads:
    the child's error comes back as the one line and exit 2, nothing else on stderr (no second process speaking)."""
    bad = tmp_path / "events.db"
    if kind == "not SQLite":
        bad.write_text("hello")
    else:
        db = sqlite3.connect(bad)
        db.execute("CREATE TABLE other (x)")
        db.commit()
        db.close()
    done = subprocess.run(
        [sys.executable, "-m", "zymi_tui", "observe", str(bad)], capture_output=True, text=True, timeout=LIMIT
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and str(bad) in done.stderr, done.stderr
    assert ("no `events` table" in done.stderr) == (kind == "no events table"), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
