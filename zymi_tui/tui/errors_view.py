"""The app's one handler for user-facing errors: a `UserError` a worker raises is shown, not a crash.

Screens that show an error in place (a status line, a panel) still catch it themselves; what no
screen catches reaches `_handle_exception` wrapped in Textual's `WorkerFailed`, and is shown as a
notification titled with the error's `title`. Any other exception keeps Textual's behaviour.
"""

from __future__ import annotations

from typing import TypeVar

from textual.app import App
from textual.worker import WorkerFailed

from zymi_tui.errors import UserError

R = TypeVar("R")


def show_user_error(app: App[object], error: UserError) -> None:
    app.notify(error.one_line(), title=error.title, severity="error", timeout=10)


class UserErrorApp(App[R]):
    """An App that shows a worker's UserError (message and hint) instead of exiting on it."""

    def _handle_exception(self, error: Exception) -> None:
        cause = error.error if isinstance(error, WorkerFailed) else None
        if isinstance(cause, UserError):
            show_user_error(self, cause)  # type: ignore[arg-type]
            return
        super()._handle_exception(error)
