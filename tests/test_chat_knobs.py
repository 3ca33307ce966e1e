"""Knobs while chatting: a profile switched between turns shapes the next call; F2 and F5 show the what-if."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_chat_support import (
    SIZE,
    capture_requests,
    chat_app,
    chat_screen,
    cli,
    demo_project,
    send,
    store_events,
)
from tests.waiting import workers_idle
from zymi_tui.context.knobs import PROFILES
from zymi_tui.events import kinds as k
from zymi_tui.events.location import SqliteStore
from zymi_tui.tui.app import DashboardApp
from zymi_tui.tui.chat.context_view import ContextScreen
from zymi_tui.tui.target import Target


async def test_a_profile_switched_between_turns_shapes_the_next_call(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    app = chat_app(project)
    async with app.run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        capture = capture_requests(app)
        await send(pilot, "hello, what is in billing?")
        first_turn_calls = len(capture.agent_requests())
        await pilot.press("f3")  # project -> chat
        assert screen.session.profile == "chat"
        assert "profile chat: window 2, soft 40000" in str(screen.query_one("#chat-header").render())
        await send(pilot, "and the ledger?")
        await workers_idle(pilot)
        bar = str(screen.query_one("#chat-bar").render())
        assert "under profile chat (same trajectory assumed)" in bar
    events = await store_events(project)
    started = [se.event.kind for se in events if isinstance(se.event.kind, k.WorkflowNodeStarted)]
    recorded = [s.engine_notes["knobs"] for s in started]
    assert recorded[1] == PROFILES["chat"].values() and recorded[0] != recorded[1]
    # the next call is what the context engine builds under the chat profile for the same stream
    calls = [se for se in events if isinstance(se.event.kind, k.LlmCallStarted) and se.event.kind.iteration > 0]
    assert not any(isinstance(se.event.kind, k.ContextCompacted) for se in events)
    target = calls[first_turn_calls]
    run = cli("replay", str(project), "--profile", "chat", "--json", "--messages")
    assert run.returncode == 0, run.stderr
    rows = {(r["stream_id"], r["sequence"]): r for r in map(json.loads, run.stdout.splitlines()) if "sequence" in r}
    row = rows[(target.event.stream_id, target.event.sequence)]
    assert row["messages"] == capture.agent_requests()[first_turn_calls].messages
    assert row["chars"] == target.event.kind.approx_context_chars  # type: ignore[union-attr]


async def test_f2_shows_the_last_call_under_each_profile(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    async with chat_app(project).run_test(size=SIZE) as pilot:
        await send(pilot, "audit all modules")
        await pilot.press("f2")
        await workers_idle(pilot)
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, ContextScreen)
        recorded = str(screen.query_one("#ctx-bar").render())
        assert "rebuilt under project" in recorded and "what-if" not in recorded
        await pilot.press("right")
        await workers_idle(pilot)
        await pilot.pause()
        chat = str(screen.query_one("#ctx-bar").render())
        assert "rebuilt under chat" in chat and "what-if: assumes the same trajectory" in chat
        await pilot.press("p")  # use it for the next turn
        assert screen.session.profile == "chat"
        await pilot.press("escape")
        await chat_screen(pilot)


async def test_f5_opens_the_knob_editor_on_the_last_call(tmp_path: Path) -> None:
    from zymi_tui.tui.tuning.editor import TuningScreen

    project = demo_project(tmp_path)
    async with chat_app(project).run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        await pilot.press("f5")
        await workers_idle(pilot)
        assert "no LLM call yet" in str(screen.query_one("#chat-hint").render())
        await send(pilot, "hello")
        last = await screen.session.last_call()
        await pilot.press("f5")
        await workers_idle(pilot)
        await pilot.pause()
        editor = pilot.app.screen
        assert isinstance(editor, TuningScreen)
        assert last is not None and editor.stream_id == last.event.stream_id
        assert editor.want_seq == last.event.sequence
        await pilot.press("escape")
        await chat_screen(pilot)


def chatted_dashboard(tmp_path: Path) -> tuple[Path, DashboardApp]:
    """A demo project whose store holds one chat turn, and the dashboard on that store."""
    project = demo_project(tmp_path)
    assert cli("chat", "-d", str(project), stdin="hello\n").returncode == 0  # a store to open
    return project, DashboardApp(Target(SqliteStore(project / ".zymi" / "events.db"), project), theme="textual-dark")


async def test_the_chat_opens_over_the_dashboard_and_comes_back(tmp_path: Path) -> None:
    from zymi_tui.tui.app import MainScreen
    from zymi_tui.tui.chat.launch import push_chat
    from zymi_tui.tui.chat.screen import ChatScreen

    project, app = chatted_dashboard(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert await push_chat(app, project) is None
        screen = await chat_screen(pilot)
        assert len(screen.transcript.turns) == 1  # the chat resumed on its stream
        await send(pilot, "and the ledger?")
        await pilot.press("f4")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and not any(isinstance(s, ChatScreen) for s in app.screen_stack)
        assert screen.session.closed
        assert "no project.yml" in (await push_chat(app, tmp_path) or "")
        dashboard = app.screen
        assert isinstance(dashboard, MainScreen) and dashboard.reader is not None
        await (
            dashboard.reader.close()
        )  # the dashboard does not close its reader (its connection thread would outlive the test)
    kinds = [type(se.event.kind).__name__ for se in await store_events(project)]
    assert kinds.count("PipelineCompleted") == 2


async def test_the_dashboard_hook_never_chats_on_the_bundled_sample(tmp_path: Path) -> None:
    from importlib import resources

    from zymi_tui.tui.chat.hook import writable_project

    project = demo_project(tmp_path)
    assert writable_project(project) == project
    assert writable_project(None) is None
    assert writable_project(tmp_path) is None  # no project.yml
    sample = Path(str(resources.files("zymi_tui"))) / "data" / "sample"
    inside = next(p.parent for p in sample.rglob("project.yml"))  # the shipped sample has its project
    assert writable_project(inside) is None


async def test_d_on_the_dashboard_opens_the_chat_on_its_project(tmp_path: Path) -> None:
    from zymi_tui.tui.chat.screen import ChatScreen

    project, app = chatted_dashboard(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("d")
        screen = await chat_screen(pilot)
        assert isinstance(screen, ChatScreen)
        assert screen.session.ws.root.resolve() == project.resolve()
        assert len(screen.transcript.turns) == 1  # the chat of this project, resumed on its stream
        await pilot.press("f4")
        await pilot.pause()
