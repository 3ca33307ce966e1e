"""Bad input at the chat: an empty message, a 1 MB paste, a configured provider without its key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.test_chat_support import (
    SIZE,
    chat_app,
    chat_screen,
    demo_project,
    send,
    store_events,
    zymi_raw,
    zymi_verify,
)
from zymi_tui.events import kinds as k
from zymi_tui.tui.chat.widgets import PromptInput, TurnView

MISSING = "ZYMI_TUI_TEST_UNSET_KEY"


async def test_an_empty_message_sends_nothing(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    async with chat_app(project).run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        for blank in ("", "   "):
            screen.query_one("#prompt", PromptInput).value = blank
            await pilot.press("enter")
            await pilot.pause()
            assert "empty message: nothing sent" in str(screen.query_one("#chat-hint").render())
        assert not list(screen.query(TurnView))
    assert await store_events(project) == []


async def test_a_one_megabyte_paste_is_recorded_whole_and_fails_the_hard_cap(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    text = ("lorem ipsum " * 90_000)[:1_000_000]
    async with chat_app(project).run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        await send(pilot, text)
        (view,) = screen.query(TurnView)
        shown = str(view.query_one(".user").render())
        assert "1,000,000 bytes, shown cut; recorded whole" in shown and len(shown) < 3000
        assert screen.query_one("#prompt", PromptInput).history == [text]
        # the task is Layer A, whole: zymi's engine refuses a context over the hard cap (60000 in the demo)
        assert view.turn.status == "failed"
        prompt = yaml.safe_load((project / "agents" / "assistant.yml").read_text())["system_prompt"]
        chars = len(text) + len(prompt.encode())  # Layer A: system prompt + task
        error = f"[reply] context build failed: context exceeds hard cap: {chars} chars > 60000 hard cap"
        assert str(view.query_one(".error").render()) == f"error: {error}"
        await send(pilot, "hello")  # the chat goes on: the failed task is not in the step stream
        assert [v.turn.status for v in screen.query(TurnView)] == ["failed", "done"]
    events = await store_events(project)
    received = [se.event.kind for se in events if isinstance(se.event.kind, k.UserMessageReceived)]
    assert len(received) == 2 and received[0].content.content == text
    assert len(zymi_raw(project)) == len(events)
    assert zymi_verify(project).returncode == 0


def _keyed_project(tmp: Path) -> Path:
    project = demo_project(tmp)
    text = (project / "project.yml").read_text()
    text = text.replace(
        "llm:\n  provider: demo\n  model: demo\n",
        f"llm:\n  provider: openai\n  model: gpt-4o-mini\n  api_key: ${{env.{MISSING}}}\n",
    )
    (project / "project.yml").write_text(text)
    return project


async def test_a_missing_key_offers_the_demo_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MISSING, raising=False)
    project = _keyed_project(tmp_path)
    app = chat_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
    assert app.setup_error is not None
    assert MISSING in app.setup_error and "--demo-model" in app.setup_error
    assert "\n" not in app.setup_error
    assert not (project / ".zymi" / "events.db").exists() or await store_events(project) == []

    app = chat_app(project, demo_model=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        assert "demo/demo" in str(screen.query_one("#chat-header").render())
        await send(pilot, "hello")
        assert [v.turn.status for v in screen.query(TurnView)] == ["done"]
