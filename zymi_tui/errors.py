"""The one error family every user-facing failure belongs to.

A `UserError` carries a one-line `message` (what went wrong, for a person), an optional `hint`
(what to do about it) and a `title` (the heading a screen shows). The CLI prints it as one line on
stderr with `exit_code`; the app shows it in place and as a notification. Nothing re-wraps it as
`str(e)`: raise a subclass, or let it pass through.

This module imports nothing from the package, so every layer may depend on it.
"""

from __future__ import annotations

EXIT_USAGE = 2


class UserError(Exception):
    """A failure the user can act on. Subclasses set `title`; instances may override `exit_code`."""

    title = "Error"
    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def one_line(self) -> str:
        """The message and, when there is one, what to do, on one line."""
        return f"{self.message} ({self.hint})" if self.hint else self.message
