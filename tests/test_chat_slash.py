"""Slash commands behave the same in `chat --plain` and in the full chat: never sent to the model, /help whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from textual.widgets._toast import Toast

from tests.test_chat_support import SIZE, chat_app, chat_screen, cli, demo_project, send, wait_for
from zymi_tui.tui.chat.widgets import PromptInput, TurnView

COMMAND_LINES = ("/profile [NAME]", "/context", "/help", "/quit")


def user_messages(project: Path) -> list[str]:
    db = project / ".zymi" / "events.db"
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        q = "SELECT json_extract(data, '$.kind.data.content.User') FROM events WHERE kind_tag='user_message_received'"
        return [r[0] for r in con.execute(q)]
    finally:
        con.close()


def test_plain_chat_runs_slash_commands_and_sends_only_messages(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    lines = ["/help", "/profile chat", "/nope", "hello there", "/context", "/profile", "/quit", "not sent"]
    run = cli("chat", "-d", str(project), "--plain", stdin="".join(f"{line}\n" for line in lines))
    assert run.returncode == 0, run.stderr
    out = run.stdout
    for usage in COMMAND_LINES:
        assert usage in out, usage
    assert "Profiles: project, chat, coding, eval" in out
    assert "profile chat (from the next turn): window 2, soft 40000, hard 80000, min_tail 2, forget 12" in out
    assert "unknown command /nope (not sent to the model)" in out
    assert "bot> [demo model]" in out
    assert "last call (" in out and "layer A" in out and "--step-stream" in out
    assert "profile coding (from the next turn)" in out  # /profile alone: the next profile after chat
    assert user_messages(project) == ["hello there"]  # /quit ended the chat before "not sent"


async def test_full_chat_runs_the_same_commands(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    async with chat_app(project).run_test(size=SIZE, notifications=True) as pilot:  # toasts painted
        screen = await chat_screen(pilot)
        prompt = screen.query_one("#prompt", PromptInput)
        for _ in range(2):  # twice: one copy of the commands, in the conversation, and no pop-up over it
            prompt.value = "/help"
            await pilot.press("enter")
            await pilot.pause()

        def notes() -> list[str]:
            return [str(n.render()) for n in screen.query(".help-note")]

        await wait_for(pilot, lambda: any("/quit" in n for n in notes()))
        (shown,) = notes()
        for usage in COMMAND_LINES:
            assert usage in shown, shown
        assert "Profiles: project, chat, coding, eval" in shown
        assert not list(pilot.app.screen.query(Toast)), "the help is not a pop-up notice over the transcript"
        for line, hint in (("/profile chat", "profile chat"), ("/nope", "unknown command /nope")):
            prompt.value = line
            await pilot.press("enter")
            await pilot.pause()
            assert hint in str(screen.query_one("#chat-hint").render())
        assert not list(screen.query(TurnView))
        await send(pilot, "hello there")
    assert user_messages(project) == ["hello there"]
