"""Every action of the screens that writes a file says so with the file's full path, and the path exists
afterwards: exports (dashboard, inspector, profiles, advice), the palette's Screenshot, a missing export folder
(created, and said so), the chat opened from the dashboard (it writes into the store the dashboard shows, not
a store made somewhere else), and the demo's exit line (it names no folder it has removed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.conftest import zymi_tui_bin
from tests.test_life_advice_tui import dashboard_ready, open_by_key
from tests.test_tui_painted import Terminal
from tests.tui_support import make_app, scenario_copy, sql
from tests.waiting import LIMIT, pilot_until
from zymi_tui.tui.advice import AdviceScreen
from zymi_tui.tui.inspector import InspectorScreen
from zymi_tui.tui.tuning.compare_screen import CompareScreen

PATH = re.compile(r"(/[^\s,()]+)")


# A notice lives 5 s, then leaves `app._notifications`: under load a screen can take longer than that to open, and
# the list would shrink under the index a test took before acting. Every notice here stays until it is read.
KEPT = 24 * 3600.0


def shown(pilot: Pilot[None]) -> set[str]:
    """The identities of the notifications on screen now."""
    return {n.identity for n in pilot.app._notifications}


def notices(pilot: Pilot[None], before: set[str]) -> list[str]:
    """The notifications on screen that were not among `before`. (By identity, not position: Textual drops
    an expired one from the list, which would move a new one below a count taken earlier.)"""
    return [str(n.message) for n in pilot.app._notifications if n.identity not in before]


async def written_paths(pilot: Pilot[None], before: set[str], what: str) -> list[Path]:
    """The paths named by the first `wrote …` notification not among `before`: each must be whole."""
    await pilot_until(pilot, lambda: any(m.startswith("wrote ") for m in notices(pilot, before)), what)
    line = next(m for m in notices(pilot, before) if m.startswith("wrote "))
    named = [Path(p.rstrip(".;:")) for p in PATH.findall(line)]
    assert named, line
    for path in named:
        assert path.is_absolute() and path.exists(), (path, line)
    return named


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The command runs in a folder of its own (the default export folder) with no ~/Downloads."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ZYMI_TUI_EXPORT_DIR", raising=False)
    return here


async def test_every_export_names_full_paths_that_exist(tmp_path: Path, elsewhere: Path) -> None:
    db = scenario_copy("coding_compaction", tmp_path)
    run = str(sql(db, "SELECT stream_id FROM events WHERE kind_tag = 'pipeline_requested' LIMIT 1")[0][0])
    app = make_app(db)
    app.NOTIFICATION_TIMEOUT = KEPT  # type: ignore[misc]  # this app only (a ClassVar)
    async with app.run_test(size=(120, 40)) as pilot:
        await dashboard_ready(pilot)
        # the dashboard: the selected run as LHAR, and the screen as SVG
        before = shown(pilot)
        await pilot.press("ctrl+o")
        lhar, svg = await written_paths(pilot, before, "the dashboard's export")
        assert lhar.parent == svg.parent == elsewhere and svg.read_text().startswith("<svg")
        line = [
            zymi_tui_bin(),
            "export",
            str(db),
            "--project",
            str(db.parent / "project"),
            "--format",
            "lhar",
            "-r",
            run,
        ]
        cli = subprocess.run(line, capture_output=True, text=True, check=True, timeout=LIMIT)
        assert [json.loads(x) for x in lhar.read_text().splitlines()] == [
            json.loads(x) for x in cli.stdout.splitlines()
        ]
        # the palette's Screenshot (Textual's default folder, ~/Downloads, does not exist here)
        before = shown(pilot)
        app.deliver_screenshot()
        (shot,) = await written_paths(pilot, before, "the screenshot")
        assert shot.parent == elsewhere and shot.suffix == ".svg"
        # the inspector: `i` opens the call the plot names, ctrl+o writes its context and request body
        inspector = await open_by_key(pilot, "i", InspectorScreen, lambda s: s.rebuilt is not None)
        before = shown(pilot)
        await pilot.press("ctrl+o")
        md, body = await written_paths(pilot, before, "the inspector's export")
        assert md.suffix == ".md" and body.suffix == ".json" and md.parent == elsewhere
        assert f"seq{inspector.call.event.sequence}" in md.name
        await pilot.press("escape")
        # the advice panel
        await open_by_key(pilot, "A", AdviceScreen, lambda s: s.advice is not None)
        before = shown(pilot)
        await pilot.press("ctrl+o")
        assert {p.name for p in await written_paths(pilot, before, "the advice")} == {
            "zymi-advice.md",
            "zymi-advice.json",
        }
        await pilot.press("escape")
        # the profiles screen, into a folder that does not exist yet: it is created, and the line says so
        wanted = tmp_path / "new" / "exports"
        os.environ["ZYMI_TUI_EXPORT_DIR"] = str(wanted)
        try:
            await open_by_key(pilot, "X", CompareScreen, lambda s: s.comparison is not None)
            before = shown(pilot)
            await pilot.press("ctrl+o")
            paths = await written_paths(pilot, before, "the comparison")
        finally:
            del os.environ["ZYMI_TUI_EXPORT_DIR"]
        assert {p.name for p in paths if p != wanted} == {f"zymi-tui-compare.{x}" for x in ("md", "csv", "json")}
        assert f"(created {wanted})" in next(m for m in notices(pilot, before) if m.startswith("wrote "))


async def test_the_chat_opened_from_the_dashboard_writes_into_the_store_it_shows(tmp_path: Path) -> None:
    """`observe stores/x` (a store with its project folder beside it), then `d`: the chat's turn is written into
    stores/x/events.db and shown in the dashboard; no store is made inside the project folder."""
    db = scenario_copy("coding_compaction", tmp_path)
    project = db.parent / "project"
    before_rows = len(sql(db, "SELECT id FROM events"))
    app = make_app(db)
    app.NOTIFICATION_TIMEOUT = KEPT  # type: ignore[misc]  # this app only (a ClassVar)
    async with app.run_test(size=(120, 40)) as pilot:
        await dashboard_ready(pilot)
        await pilot.press("d")
        await pilot_until(pilot, lambda: type(pilot.app.screen).__name__ == "ChatScreen", "the chat")
        said = next(m for m in notices(pilot, set()) if m.startswith("chat on "))
        assert f"it writes to {db} (this store)" in said, said
        chat: Any = pilot.app.screen
        chat.query_one("#prompt").value = "hello from the dashboard"
        await pilot.press("enter")
        await pilot_until(pilot, lambda: chat.turn_worker is not None and chat.turn_worker.is_finished, "the turn")
        await pilot.press("f4")
        main = await dashboard_ready(pilot)
        await pilot_until(pilot, lambda: any("term" in s.stream_id for s in main.runs.summaries), "the chat's run")
    assert not (project / ".zymi").exists()
    said_rows = sql(db, "SELECT data FROM events WHERE kind_tag = 'user_message_received'")
    assert len(sql(db, "SELECT id FROM events")) > before_rows
    assert any("hello from the dashboard" in str(r[0]) for r in said_rows)


def test_the_demo_exit_line_names_no_folder_it_removed(tmp_path: Path) -> None:
    term = Terminal(["-m", "zymi_tui", "demo"], tmp_path, size=(100, 30))
    try:
        assert term.wait_for("F2", timeout=LIMIT), "\n".join(term.screen.display)
        term.press(b"\x11")  # ctrl+q
        deadline = time.monotonic() + LIMIT
        while term.proc.poll() is None and time.monotonic() < deadline:
            term.pump(0.1)
        term.pump(0.3)
    finally:
        code = term.close()
    assert code == 0
    tail = bytes(term.raw[term.raw.rfind(b"\x1b[?1049l") :]).decode(errors="replace")
    for folder in re.findall(r"(/tmp/[^\s;,'\"]+)", tail):
        named = Path(folder.rstrip("."))
        assert named.exists() or "removed" in tail, f"{named} is named but gone:\n{tail}"
    assert "resume with" not in tail, tail
