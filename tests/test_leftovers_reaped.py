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


# a server started as the Phoenix checks start theirs (a session of its own), by a parent then killed outright
SERVER_OF_KILLED_PARENT = (
    "import subprocess, sys, time; from tests.leftovers import die_with_parent; "
    "p = subprocess.Popen(['sleep', '60'], start_new_session=True, preexec_fn=die_with_parent); "
    "print(p.pid, flush=True); time.sleep(60)"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_server_dies_with_the_process_that_started_it() -> None:
    repo = Path(__file__).resolve().parent.parent
    parent = subprocess.Popen(
        [sys.executable, "-c", SERVER_OF_KILLED_PARENT], cwd=repo, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    server = int(parent.stdout.readline())
    parent.kill()  # SIGKILL: no `finally` of the parent runs
    parent.wait()
    deadline = time.monotonic() + 10
    while (state := _state(server)) is not None and state[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    leftovers.reap_orphans()  # re-parented to pytest (a subreaper) as it died
    assert state is None or state[0] == "Z", f"the server outlived its parent: {state}"
