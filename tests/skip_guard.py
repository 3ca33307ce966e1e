"""A run fails if any test skips for a reason other than the four the suite allows.

The recorded stores and the harness live in the repository (tests/oracle/), so a fresh clone runs every
test. Only four things may be missing on a machine: a PostgreSQL server that can be started, the real
zymi binary (installed by the `test` extra), a bubblewrap that can make a sandbox (absent, or no
user namespaces in a container), and strace (the oracle of what a shell command opens). A skip for
any other reason is a test that silently stopped running: the session ends with exit code 1 and lists them.

Loaded by tests/conftest.py (`pytest_plugins`); each session gets its own guard, so an inner pytest run
(pytester) keeps its own list.
"""

from __future__ import annotations

import pytest

ALLOWED = ("no PostgreSQL server", "no zymi binary", "no usable bubblewrap", "no strace")


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


class SkipGuard:
    def __init__(self) -> None:
        self.unexpected: list[tuple[str, str]] = []

    def _note(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            reason = skip_reason(report)
            if not reason.startswith(ALLOWED):
                self.unexpected.append((report.nodeid, reason))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._note(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._note(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unexpected and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.unexpected:
            terminalreporter.section("skips that are not allowed", sep="=", red=True, bold=True)
            terminalreporter.line("allowed skip reasons start with: " + ", ".join(repr(a) for a in ALLOWED))
            for nodeid, reason in self.unexpected:
                terminalreporter.line(f"{nodeid}: {reason}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SkipGuard(), "skip-guard")
