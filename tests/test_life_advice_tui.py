"""Pilot tests (keys only) of the message-life grid (`L`) and the Advice panel (`A`), each checked
against the CLI run as a separate process."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static

from tests.conftest import zymi_tui_bin
from tests.tui_support import make_app, scenario_copy
from tests.waiting import pilot_until
from zymi_tui.tui.advice import AdviceScreen
from zymi_tui.tui.app import MainScreen
from zymi_tui.tui.life import LifeScreen
from zymi_tui.tui.resume.modal import ForkModal
from zymi_tui.tui.tuning.editor import TuningScreen


def cli_json(*args: str) -> Any:
    out = subprocess.run([zymi_tui_bin(), *args], capture_output=True, text=True, check=True, timeout=300).stdout
    return json.loads(out)


S = TypeVar("S", bound=Screen[Any])


async def open_by_key(pilot: Pilot[None], key: str, kind: type[S], loaded: Callable[[S], object]) -> S:
    """Press `key` and wait until the screen it opens, a `kind`, has `loaded`."""
    await pilot.press(key)
    await pilot_until(pilot, lambda: isinstance(pilot.app.screen, kind) and loaded(pilot.app.screen))
    screen = pilot.app.screen
    assert isinstance(screen, kind)
    return screen


def text_of(screen: Screen[Any], selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def dashboard_ready(pilot: Pilot[None]) -> MainScreen:
    app = pilot.app

    def ready() -> bool:
        return isinstance(app.screen, MainScreen) and bool(app.screen.events.rows) and not app.screen.run_loading

    await pilot_until(pilot, ready)
    assert isinstance(app.screen, MainScreen)
    return app.screen


def reason_at(db: Path, stream: str, seq: int, source_seq: int, *extra: str) -> str:
    """The reason `zymi-tui context` gives for message `source_seq` at the call `seq` (dropped: forgotten)."""
    doc = cli_json("context", str(db), "--project", str(db.parent / "project"), "--stream", stream, "--seq", str(seq),
                   "--json", *extra)  # fmt: skip
    entry = next((e for e in doc["entries"] if e["source_seq"] == source_seq), None)
    return "forgotten" if entry is None else str(entry["reason"])


async def test_message_life_grid_cursor_find_and_whatif(tmp_path: Path) -> None:
    db = scenario_copy("coding_default", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(140, 40)) as pilot:
        await dashboard_ready(pilot)
        screen = await open_by_key(pilot, "L", LifeScreen, lambda s: s.life is not None)
        head, detail = text_of(screen, "#life-head"), text_of(screen, "#life-detail")
        assert "rows by rent" in head and "█ in full" in head and "▒ masked" in head
        # the top row by rent, at the last call: what `zymi-tui context` says of that message there
        top = detail.split("\n")[0].split()[1]  # "seq N tool · ..."
        last = int(detail.split("(seq ")[1].split(")")[0])
        reason = reason_at(db, screen.stream, last, int(top))
        assert reason.split(" (")[0] in detail
        await pilot.press("home")
        assert "not yet there" in text_of(screen, "#life-detail")
        # find: a text of one message moves the cursor to it
        await pilot.press("end", "slash")
        await pilot.press(*"Listing the workspace")
        await pilot.press("enter")
        detail = text_of(screen, "#life-detail")
        assert "Listing the workspace" in detail and "1 message(s) match" in detail
        # what-if: the chat profile, cells that change marked, the message's state under it from the CLI
        await pilot.press("p")
        await pilot_until(pilot, lambda: screen.whatif is not None)
        head, detail = text_of(screen, "#life-head"), text_of(screen, "#life-detail")
        assert "what-if (chat)" in head
        changed = int(head.split(" cell(s) change")[0].split()[-1])
        assert changed > 0
        seq = int(detail.split("\n")[0].split()[1])
        want = reason_at(db, screen.stream, last, seq, "--profile", "chat")
        line = next(x for x in detail.split("\n") if x.startswith("what-if (chat):"))
        assert want.split(" (")[0].split(";")[0] in line or (want == "forgotten" and "forgotten" in line)


async def test_advice_panel_edit_and_fork_keys(tmp_path: Path) -> None:
    db = scenario_copy("hard_cap", tmp_path)
    advice = cli_json("advise", str(db), "--project", str(db.parent / "project"), "--json")
    first = advice["findings"][0]
    assert first["signal"] == "hard_cap_exceeded"
    knobs = first["recommendation"]["knobs"]
    app = make_app(db)
    async with app.run_test(size=(150, 45)) as pilot:
        await dashboard_ready(pilot)
        screen = await open_by_key(pilot, "A", AdviceScreen, lambda s: s.advice is not None)
        assert screen.query_one(OptionList).option_count == len(advice["findings"])
        detail = text_of(screen, "#advice-detail")
        assert detail.startswith("hard_cap_exceeded") and first["recommendation"]["effect"]["profile"] in detail
        # the panel's counts are the CLI's (one replay): agent calls, cache breaks, the objective
        head, b = text_of(screen, "#advice-head"), advice["baseline"]
        assert f"{len(advice['findings'])} finding(s) over {b['agent_calls']} agent calls" in head
        assert f"cache breaks {b['cache_breaks']} of {b['agent_calls']} agent calls" in head
        assert advice["objective"]["label"] in head
        editor = await open_by_key(pilot, "e", TuningScreen, lambda s: s.ready)
        await pilot_until(pilot, lambda: editor.query_one("#knob-observation_window", Input).value == str(
            knobs["observation_window"]))  # fmt: skip
        for name, value in knobs.items():
            assert editor.query_one(f"#knob-{name}", Input).value == ("off" if value is None else str(value))
        assert editor.stream_id == first["call"]["stream_id"]
        await pilot.press("escape")
        await pilot_until(pilot, lambda: isinstance(app.screen, AdviceScreen))
        await pilot.press("f")
        await pilot_until(pilot, lambda: isinstance(app.screen, ForkModal))
        body = ""

        def planned() -> bool:
            nonlocal body
            body = text_of(app.screen, "#fork-body")
            return f"observation_window={knobs['observation_window']}" in body

        await pilot_until(pilot, planned)
        assert f"min_tail_turns={knobs['min_tail_turns']}" in body
        await pilot.press("escape")


async def test_inspector_diff_and_export(tmp_path: Path, monkeypatch: Any) -> None:
    """The inspector shows the call against the previous one and ctrl+o writes what the CLI prints."""
    import pytest

    from tests.tui_support import sql
    from zymi_tui.tui.inspector import InspectorScreen

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    db = scenario_copy("coding_default", tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    stream, seq, gid = sql(db, "SELECT stream_id, sequence, id FROM events WHERE kind_tag='llm_call_started' "
                               "ORDER BY id LIMIT 1 OFFSET 11")[0]  # fmt: skip
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await dashboard_ready(pilot)
        assert main.events.jump_to(int(gid))  # type: ignore[call-overload]
        await open_by_key(pilot, "i", InspectorScreen, lambda s: s.rebuilt is not None)
        summary = text_of(app.screen, "#summary")
        assert "vs the previous call" in summary and "added" in summary
        assert "masked by observation_window=10" in summary  # the 12th call masks: the prefix breaks there
        await pilot.press("ctrl+o")
        await pilot_until(pilot, lambda: any(out.glob("*.json")))
    cli = cli_json("context", str(db), "--project", str(db.parent / "project"), "--stream", str(stream),
                   "--seq", str(seq), "--format", "json")  # fmt: skip
    (body_file,) = out.glob("*.json")
    assert json.loads(body_file.read_text(encoding="utf-8")) == cli["request_body"]
    md = subprocess.run([zymi_tui_bin(), "context", str(db), "--project", str(db.parent / "project"), "--stream",
                         str(stream), "--seq", str(seq), "--format", "md"], capture_output=True, text=True,
                        check=True).stdout  # fmt: skip
    (md_file,) = out.glob("*.md")
    assert md_file.read_text(encoding="utf-8") == md
