"""Approvals in a modal (docs/engine.md#approvals): approve, deny, or deny with an explanation for the record.

`ModalApproval` is the engine's `ApprovalHandler`: the engine writes ApprovalRequested, awaits
`decide()`, and records ApprovalGranted / ApprovalDenied with our `decided_by` and `reason`
(the terminal channel's names: this is a person at the terminal).
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static

from zymi_tui.engine.approvals import Decision
from zymi_tui.tui.actions import Act, ActionModal

DECIDED_BY = "terminal:terminal"


class ApprovalModal(ActionModal):
    """a: approve · d: deny · e: explain (type a reason, Enter denies with it)."""

    HELP_TITLE = "Approval"
    HELP_INTRO = "A tool call that the project's policy says needs your approval before it runs."
    ACTIONS = (
        Act("a", "approve", "Approve", "Let the tool call run.", "approve allow yes"),
        Act("d,escape", "deny", "Deny", "Refuse the tool call (the agent is told).", "deny refuse no"),
        Act("e", "explain", "Explain", "Type a reason, then Enter denies with it.", "explain reason deny"),
    )
    AUTO_FOCUS = "#approve"
    DEFAULT_CSS = """
    ApprovalModal { align: center middle; }
    #approval { width: 80%; max-width: 100; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    #approval-title { text-style: bold; color: $warning; }
    #approval-why { margin: 1 0; }
    #approval-reason { display: none; }
    #approval-reason.-shown { display: block; }
    #approval-buttons { height: auto; align-horizontal: center; }
    #approval-buttons Button { margin: 0 1; }
    """

    def __init__(self, description: str, explanation: str | None) -> None:
        super().__init__()
        self.description = description
        self.explanation = explanation

    def compose(self) -> ComposeResult:
        with Vertical(id="approval"):
            yield Static("The agent asks for approval", id="approval-title")
            why = self.description + (f"\nreason: {self.explanation}" if self.explanation else "")
            yield Static(why, id="approval-why", markup=False)
            yield Input(placeholder="why you deny it (recorded as the reason; Enter denies)", id="approval-reason")
            with Horizontal(id="approval-buttons"):
                yield Button("Approve (a)", variant="success", id="approve")
                yield Button("Deny (d)", variant="error", id="deny")
                yield Button("Explain (e)", id="explain")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        {"approve": self.action_approve, "deny": self.action_deny, "explain": self.action_explain}[
            event.button.id or "deny"
        ]()

    def action_approve(self) -> None:
        self.dismiss(Decision(True, DECIDED_BY))

    def action_deny(self) -> None:
        reason = self.query_one("#approval-reason", Input).value.strip()
        self.dismiss(Decision(False, DECIDED_BY, reason or None))

    def action_explain(self) -> None:
        box = self.query_one("#approval-reason", Input)
        box.add_class("-shown")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_deny()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # while typing a reason, letters are text, not shortcuts
        typing = isinstance(self.focused, Input)
        return not (typing and action in ("approve", "deny", "explain"))


class ModalApproval:
    """The engine's approval handler for the chat screen: one modal at a time, answered by a person."""

    channel = "terminal"

    def __init__(self, app: App[Any] | None = None) -> None:
        self.app = app
        self._lock = asyncio.Lock()

    async def decide(self, description: str, explanation: str | None) -> Decision:
        if self.app is None:
            return Decision(False, DECIDED_BY, "no_input_channel")
        async with self._lock:
            answer: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
            modal = ApprovalModal(description, explanation)

            def done(decision: Decision | None) -> None:
                if not answer.done():
                    answer.set_result(decision or Decision(False, DECIDED_BY))

            self.app.push_screen(modal, done)
            try:
                return await answer
            except asyncio.CancelledError:
                if modal.is_attached and self.app.screen is modal:
                    self.app.pop_screen()
                raise
