"""`zymi-tui observe` begins its hash-chain check at launch, in a child process of its own: the banner says
"verified" (or names the runs that fail) without waiting for the runs list, whose reads are held back here."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from benchmarks.make_long_run import write_clones
from tests.test_tui_painted import HELD, Terminal
from tests.waiting import LIMIT


def _screen(term: Terminal) -> str:
    return "\n".join(term.screen.display)


def _held_dashboard(db: Path, tmp_path: Path) -> tuple[Terminal, Path]:
    release = tmp_path / "release"
    return Terminal(["-c", HELD, str(db), str(release)], tmp_path), release


def test_the_banner_says_verified_before_every_run_is_listed(tmp_path: Path) -> None:
    db = tmp_path / "many.db"
    write_clones(db, 150 * 60, "memory", many=True)  # 150 runs: the first page holds the newest 60
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    (streams,) = con.execute("SELECT COUNT(DISTINCT stream_id) FROM events").fetchone()
    con.close()
    term, release = _held_dashboard(db, tmp_path)
    try:
        assert term.wait_for(f"{streams} stream(s) verified", timeout=LIMIT), _screen(term)
        assert "Runs (newest 60…)" in _screen(term)  # the whole list is still held back
        release.touch()
        assert term.wait_for("Runs (150)", timeout=LIMIT), _screen(term)
        assert f"{streams} stream(s) verified" in _screen(term)
    finally:
        release.touch()
        code = term.close()
    assert code == 0


def test_a_tampered_row_is_named_by_the_check_begun_at_launch(tmp_path: Path) -> None:
    db = tmp_path / "many.db"
    write_clones(db, 150 * 60, "memory", many=True)
    con = sqlite3.connect(db)
    newest = con.execute("SELECT MAX(id) FROM events").fetchone()[0]
    con.execute("UPDATE events SET data = replace(data, '\"engine\"', '\"Engine\"') WHERE id = ?", (newest,))
    con.commit()
    con.close()
    term, release = _held_dashboard(db, tmp_path)
    try:
        # the newest run, selected in the first frame, says why its chain fails
        assert term.wait_for("hash chain does not verify: run-149", timeout=LIMIT), _screen(term)
        assert "hash" in _screen(term) and "mismatch at sequence" in _screen(term), _screen(term)
        assert "Runs (newest 60…)" in _screen(term)  # the whole list is still held back
    finally:
        release.touch()
        code = term.close()
    assert code == 0
