"""The first minute, pressed key by key: `zymi-tui demo` and `d` on the dashboard, then F2 F3 F4 F5 and Esc."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.test_chat_support import chat_app, demo_project, finish_turn, wait_for
from tests.waiting import pilot_until
from zymi_tui.events.location import SqliteStore
from zymi_tui.tui.app import DashboardApp, MainScreen
from zymi_tui.tui.chat.context_view import ContextScreen
from zymi_tui.tui.chat.dashboard import ChatDashboard
from zymi_tui.tui.chat.screen import ChatScreen
from zymi_tui.tui.launch import sample_store
from zymi_tui.tui.target import Target
from zymi_tui.tui.tuning.editor import TuningScreen


async def on(pilot: Pilot[Any], cls: type) -> Any:
    await wait_for(pilot, lambda: type(pilot.app.screen) is cls)
    return pilot.app.screen


async def message(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*text, "enter")
    await pilot.pause(0.1)
    await finish_turn(pilot)


async def f_keys_from_the_chat(pilot: Pilot[Any], chat: ChatScreen) -> None:
    """F2 and back, F3, F5 and back: the chat keys that do not leave the chat."""
    await pilot.press("f2")
    await on(pilot, ContextScreen)
    await pilot.press("escape")
    await on(pilot, ChatScreen)
    before = chat.session.profile
    await pilot.press("f3")
    assert chat.session.profile != before
    await pilot.press("f5")
    await on(pilot, TuningScreen)
    await pilot.press("escape")
    await on(pilot, ChatScreen)


async def test_demo_message_f2_esc_f3_f4_and_back(tmp_path: Path) -> None:
    app = chat_app(demo_project(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        chat = await on(pilot, ChatScreen)
        await message(pilot, "hello")
        assert chat.transcript.turns and chat.transcript.turns[-1].status == "done"
        await f_keys_from_the_chat(pilot, chat)
        await pilot.press("f4")  # the dashboard on the chat's store (this raised StylesheetError)
        dash = await on(pilot, ChatDashboard)
        await wait_for(pilot, lambda: bool(dash.runs.summaries), 30)
        assert dash.selected is not None and dash.selected.stream_id == chat.session.stream
        await pilot.press("f4")
        assert await on(pilot, ChatScreen) is chat
        await message(pilot, "and again")
        assert len(chat.transcript.turns) == 2
        assert app.is_running


async def test_d_on_the_dashboard_then_every_chat_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the demo project the hook makes and keeps
    sample = sample_store()
    assert sample is not None
    store, project = sample
    assert isinstance(store, SqliteStore)
    db = store.path
    app = DashboardApp(Target(store, project, None, "sample"), theme="textual-dark")
    before = db.read_bytes()
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, MainScreen)
        await pilot.press("d")
        chat = await on(pilot, ChatScreen)
        assert chat.hosted
        await message(pilot, "hello")
        await f_keys_from_the_chat(pilot, chat)
        await pilot.press("escape")  # nothing running: says so, stays
        assert type(app.screen) is ChatScreen
        await pilot.press("f4")  # hosted: back to the dashboard it came from
        await on(pilot, MainScreen)
        assert app.is_running
    assert db.read_bytes() == before  # the bundled sample is never the chat's store
    assert [p.name[:14] for p in tmp_path.iterdir()] == ["zymi-tui-demo-"]


async def test_a_compaction_is_a_visible_event_in_the_demo_conversation(tmp_path: Path) -> None:
    from textual.widgets import Static

    from tests.test_chat_support import store_events
    from zymi_tui.events.kinds import ContextCompacted
    from zymi_tui.tui.chat.widgets import TurnView

    project = demo_project(tmp_path)
    app = chat_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        chat = await on(pilot, ChatScreen)
        for text in ("audit all modules", "now read everything at once", "read everything at once, all of it"):
            await message(pilot, text)  # the demo reads more when asked for "all" / "everything at once"
            if any(isinstance(se.event.kind, ContextCompacted) for se in await store_events(project)):
                break
        compacted = [se for se in await store_events(project) if isinstance(se.event.kind, ContextCompacted)]
        assert compacted, "the demo never compacted"

        def lines() -> list[str]:
            return [
                str(line.render())
                for view in chat.query(TurnView)
                for line in view.query(".compaction").results(Static)
                if line.display
            ]

        await pilot_until(pilot, lambda: sum(s.count("⟲") for s in lines()) >= len(compacted), "the compaction lines")
        shown = lines()
        assert shown and all("context compacted" in s for s in shown), shown
        assert sum(s.count("⟲") for s in shown) == len(compacted)
        assert "saved" in shown[0] or "grew" in shown[0]
        # forgetting and masking are visible on the chat's curve, and named in its legend
        from zymi_tui.tui.plot import ContextPlot

        legend = [name for name, _ in chat.query_one(ContextPlot).legend_items]
        assert any(n.startswith("◆ masking") for n in legend), legend
        assert any(n.startswith("◇ forgetting") for n in legend), legend
        assert any(n.startswith("▼ compaction") or n.startswith("▲") for n in legend), legend
