"""An orphan re-parented to pytest (a subreaper) is waited for once it exits, not left a zombie until
the session ends (a sandbox's init outliving its bwrap by a moment: ~20 zombies under pytest in CI)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import leftovers

ORPHAN = "import subprocess; p = subprocess.Popen(['sleep', '0.3']); print(p.pid)"


def _state(pid: int) -> tuple[str, int] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_CHILD_SUBREAPER are Linux's")
def test_an_exited_orphan_is_reaped() -> None:
    # its parent exits at once: the `sleep` is re-parented to pytest
    pid = int(subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True, check=True).stdout)
    deadline = time.monotonic() + 10
    while (state := _state(pid)) is not None and state[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state == ("Z", os.getpid()), f"the orphan should be pytest's zombie by now, not {state}"
    assert leftovers.reap_orphans() == [pid]
    assert _state(pid) is None
