"""The dashboard on the chat's store, opened from the chat (F4 goes back)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from zymi_tui.tui.app import MainScreen
from zymi_tui.tui.chat.session import ChatSession
from zymi_tui.tui.target import Target


class ChatDashboard(MainScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("f4", "back", "Back to chat")]

    def __init__(self, session: ChatSession) -> None:
        super().__init__(Target(session.ws.store, session.ws.root, session.stream))

    def action_back(self) -> None:
        self.dismiss()
