"""`zymi-tui chat` / `demo`: the chat screen as an app.

Ctrl-C (or Ctrl-Q) cancels a running turn (sealed in the store), closes the store and quits.
"""

from __future__ import annotations

import contextlib
from typing import ClassVar

from textual.binding import Binding, BindingType

from zymi_tui.errors import UserError
from zymi_tui.tui.base_app import SafeApp
from zymi_tui.tui.chat.approval import ModalApproval
from zymi_tui.tui.chat.dashboard import ChatDashboard
from zymi_tui.tui.chat.screen import ChatScreen
from zymi_tui.tui.chat.session import ChatOptions, ChatSession


class ChatApp(SafeApp):
    TITLE = "zymi-tui chat"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c,ctrl+q", "quit_chat", "Quit", priority=True, show=False),  # help: "Ctrl+Q quits"
    ]

    def __init__(self, options: ChatOptions, *, hint: str | None = None, theme: str | None = None) -> None:
        super().__init__()
        self.options = options
        self.hint = hint
        self.session: ChatSession | None = None
        self.setup_error: str | None = None
        self.approvals = ModalApproval(self)
        if theme:
            self.theme = theme

    async def on_mount(self) -> None:
        try:
            self.session = await ChatSession.open(self.options, self.approvals)
        except UserError as e:
            self.setup_error = e.one_line()
            self.exit(return_code=2)
            return
        await self.push_screen(ChatScreen(self.session, hint=self.hint, dashboard=ChatDashboard))

    @property
    def chat(self) -> ChatScreen:
        for screen in self.screen_stack:
            if isinstance(screen, ChatScreen):
                return screen
        raise LookupError("the chat screen is not open")

    async def action_quit_chat(self) -> None:
        with contextlib.suppress(LookupError):
            await self.chat.stop_turn()
        self.exit()

    async def on_unmount(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            await session.close()
