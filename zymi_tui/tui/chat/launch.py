"""Open the chat from another app (the dashboard): one call that opens the session and pushes the screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App

from zymi_tui.errors import UserError
from zymi_tui.events.location import StoreLocation
from zymi_tui.tui.chat.approval import ModalApproval
from zymi_tui.tui.chat.screen import ChatScreen
from zymi_tui.tui.chat.session import ChatOptions, ChatSession


async def push_chat(
    app: App[Any], project: Path, stream: str = "term", profile: str | None = None, store: StoreLocation | None = None
) -> str | None:
    """Push the chat on `project` over the current screen (F4 comes back); returns an error line, or None.

    For the dashboard: `Binding("C", "chat", "Chat")` and
    `async def action_chat(self): error = await push_chat(self.app, project); if error: self.notify(error)`.
    """
    options = ChatOptions(project_dir=project, stream=stream, profile=profile, store=store)
    try:
        session = await ChatSession.open(options, ModalApproval(app))
    except UserError as e:
        return e.one_line()
    await app.push_screen(ChatScreen(session, hosted=True))
    return None
