"""How many CPU cores this process may run on: what a pool of workers (the sweep) or a child reading
beside the screen's start-up (`observe`) can use. Imports nothing from the package."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on (its affinity: a container or `taskset` may allow fewer than the
    machine has), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
