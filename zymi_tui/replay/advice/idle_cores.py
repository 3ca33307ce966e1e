"""How much of the cores this process may run on stood idle over a stretch of time (Linux's /proc/stat):
whether a second process would have had a core to itself. `advise` measures it over its first pass, the
seconds just before it would fork a child for the second: the one-minute load average it read before
also counts the processes that ran and ended in that minute (a benchmark's own alternated runs kept it
at ~1.1 on an idle 2-core machine) and, lagging, misses the ones that just started."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

PROC_STAT = "/proc/stat"
MIN_SPAN_S = 0.25  # under this, the kernel's clock ticks (10 ms) are too coarse to tell


def idle_ticks() -> int | None:
    """The idle and waiting-for-I/O clock ticks of the cores this process may run on, so far (None where
    /proc/stat cannot be read, or names none of them)."""
    try:
        with open(PROC_STAT, "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    ticks, seen = 0, 0
    for line in lines:
        name, _, rest = line.partition(b" ")
        if not name.startswith(b"cpu") or not name[3:].isdigit():
            continue  # the machine's total ("cpu"), or not a core's line
        if cores is not None and int(name[3:]) not in cores:
            continue
        fields = rest.split()
        ticks, seen = ticks + int(fields[3]) + int(fields[4]), seen + 1
    return ticks if seen else None


@dataclass(frozen=True)
class IdleClock:
    """Idle ticks counted from `started`."""

    ticks: int | None
    at: float

    @classmethod
    def started(cls) -> IdleClock:
        return cls(idle_ticks(), time.monotonic())

    def idle_cores(self) -> float | None:
        """How many of the usable cores stood idle on average since `started` (None: not known, or too soon
        to tell)."""
        now, span = idle_ticks(), time.monotonic() - self.at
        if now is None or self.ticks is None or span < MIN_SPAN_S:
            return None
        return (now - self.ticks) / os.sysconf("SC_CLK_TCK") / span
