"""The base of the project's Textual apps (dashboard, chat, tuning): safe notifications, a crash log.

A notification shows its text as written, never as markup, whoever raised it: every message may carry
a stream id, a path or an error from a store. If the app dies of an exception, the traceback goes to
the log file (tui/failures.py) and the terminal, once restored, gets one line naming the error and that
file; the command then exits 1 (`App.return_code`).
"""

from __future__ import annotations

import sys

from textual.notifications import SeverityLevel

from zymi_tui.tui.errors_view import UserErrorApp
from zymi_tui.tui.failures import write_log
from zymi_tui.tui.safe_text import clean


class SafeApp(UserErrorApp[None]):
    crash_line: str | None = None

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        super().notify(clean(message), title=clean(title), severity=severity, timeout=timeout, markup=False)

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """The palette's Screenshot: written into the export folder (tui/writes.py; Textual's default,
        ~/Downloads, may not exist) and named in full. In a browser (textual-serve) it is downloaded."""
        if self.is_web or path is not None:
            return super().deliver_screenshot(filename, path, time_format)
        from textual._files import generate_datetime_filename

        from zymi_tui.tui.writes import failed_line, write_files

        name = filename or generate_datetime_filename(self.title or "zymi-tui", ".svg", time_format)
        try:
            self.notify(write_files([(name, self.export_screenshot)]), title="Screenshot")
        except OSError as e:
            self.notify(failed_line(e), title="Screenshot", severity="error")
        return None

    def _handle_exception(self, error: Exception) -> None:
        """Textual's hook for an unhandled exception: a worker's UserError is shown (errors_view); anything
        else exits the app, with one line and a log instead of a traceback."""
        super()._handle_exception(error)
        if self.return_code != 1:
            return  # shown as a notification, the app goes on
        log = write_log(error, f"{type(self).__name__} stopped")
        where = f"traceback in {log}" if log else "the log file could not be written"
        self.crash_line = clean(f"zymi-tui: {type(error).__name__}: {error} ({where})", one_line=True)

    def _print_error_renderables(self) -> None:
        """After the terminal is restored: the one crash line (never wrapped), instead of Textual's traceback."""
        if self.crash_line is None:
            super()._print_error_renderables()
            return
        self._exit_renderables.clear()
        sys.stderr.write(self.crash_line + "\n")
        sys.stderr.flush()
