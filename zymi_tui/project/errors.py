"""The project's one error class."""

from __future__ import annotations

from zymi_tui.errors import UserError


class ProjectError(UserError):
    """A project folder (or the store it names) that cannot be read or used; one line for a person."""

    title = "Project"
