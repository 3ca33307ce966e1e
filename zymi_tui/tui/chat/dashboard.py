"""The dashboard on the chat's store, opened from the chat (F4 goes back)."""

from __future__ import annotations

from zymi_tui.tui.actions import Act
from zymi_tui.tui.chat.session import ChatSession
from zymi_tui.tui.dashboard.screen import MainScreen
from zymi_tui.tui.target import Target


class ChatDashboard(MainScreen):
    ACTIONS = (
        Act("f4", "back", "Back to chat", "Close the dashboard and go back to the chat.", "chat back return"),
        *MainScreen.ACTIONS,
    )

    def __init__(self, session: ChatSession) -> None:
        super().__init__(Target(session.ws.store, session.ws.root, session.stream))

    def action_back(self) -> None:
        self.dismiss()

    async def action_chat(self) -> None:
        """`d` here is the chat this dashboard was opened from."""
        self.dismiss()
