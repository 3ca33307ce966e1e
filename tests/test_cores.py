"""The cores a process may use (the sweep's pool size, observe's reading child): its affinity, not the
machine's count (a container or `taskset` may allow fewer)."""

from __future__ import annotations

import subprocess
import sys


def test_a_process_allowed_one_core_counts_one() -> None:
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from zymi_tui.cores import usable_cores; print(usable_cores())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert done.stdout.split() == ["1"]
