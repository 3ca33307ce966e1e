"""A command started with Ctrl-C ignored (a non-interactive shell's `zymi-tui run main &`, a nohup-like
launcher) keeps it ignored, as the shell's own commands and Python itself do: a Ctrl-C at the terminal
reaches every process of the script's group, and the background run must finish, not end at 130.

The control is the same command started with Ctrl-C at its default: the same signals end it, so they
are known to arrive. The oracle for "finished" is the real zymi's `runs --raw` on the project's store."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waiting import LIMIT

from .conftest import requires_zymi, zymi_bin, zymi_tui_bin

INTERRUPTED = "interrupted (Ctrl-C)"


def _project(tmp: Path) -> Path:
    tmp.mkdir()
    done = subprocess.run([zymi_tui_bin(), "init"], cwd=tmp, capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0, done.stderr
    return tmp


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_under_sigints(cwd: Path, command: list[str], *, ignored: bool) -> tuple[int, str, int]:
    """(exit code, stderr, SIGINTs sent) of `command` sent SIGINT every 10 ms from its start to its end."""
    p = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if ignored else None,
    )
    sent, deadline = 0, time.monotonic() + LIMIT
    while p.poll() is None and time.monotonic() < deadline:
        p.send_signal(signal.SIGINT)
        sent += 1
        time.sleep(0.01)
    _, err = p.communicate(timeout=LIMIT)
    return p.returncode, err, sent


def _statuses(cwd: Path) -> list[str]:
    """The runs' statuses as the real zymi reads them from the project's store."""
    bin_ = zymi_bin()
    assert bin_ is not None
    done = subprocess.run([bin_, "runs", "--raw"], cwd=cwd, capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0, done.stderr
    return [json.loads(line)["status"] for line in done.stdout.splitlines()]


@requires_zymi
@pytest.mark.parametrize("how", ["script", "module"])
def test_a_run_started_with_ctrl_c_ignored_finishes_through_ctrl_c(how: str, tmp_path: Path) -> None:
    command = [zymi_tui_bin()] if how == "script" else [sys.executable, "-m", "zymi_tui"]
    command += ["run", "main", "-i", "task=background"]
    ignored_cwd, control_cwd = _project(tmp_path / "ignored"), _project(tmp_path / "control")

    code, err, sent = _run_under_sigints(ignored_cwd, command, ignored=True)
    assert sent >= 3, f"the run ended before it could be interrupted ({sent} signal(s)): nothing was tested"
    assert (code, err.strip()) == (0, ""), f"exit {code} after {sent} SIGINTs: {err[-600:]}"
    assert _statuses(ignored_cwd) == ["ok"]

    control_code, control_err, _ = _run_under_sigints(control_cwd, command, ignored=False)
    # ended by the first signal: at 130 once zymi-tui's code runs, or by the signal itself before that
    assert control_code == -signal.SIGINT or (control_code == 130 and INTERRUPTED in control_err), (
        control_code,
        control_err[-600:],
    )
