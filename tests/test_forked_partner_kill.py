"""A forked export partner that has been reaped is never signalled: its pid may be another process's by then.

`subprocess.Popen.kill` makes the same promise; `export_pair.Forked` stands in for it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from zymi_tui.commands.export_pair import Forked

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this system")


def test_a_reaped_partner_is_not_signalled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ends_at_once.py").write_text("def main(argv):\n    return 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    partner = Forked("ends_at_once", [])
    deadline = time.monotonic() + 30
    while partner.poll() is None:
        assert time.monotonic() < deadline, "the child did not end"
        time.sleep(0.01)
    assert partner.returncode == 7  # reaped: its pid is free for the system to give to another process
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
    partner.kill()
    assert sent == []
    assert partner.wait() == 7


def test_a_running_partner_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "waits.py").write_text("import time\ndef main(argv):\n    time.sleep(60)\n    return 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    partner = Forked("waits", [])
    partner.kill()
    assert partner.wait() == -9
