"""`advise` deals one long run's candidates in two processes when a core stood idle over its first pass
(`IdleClock`, read off /proc/stat), no longer by the one-minute load average alone, which on an idle
2-core machine stayed at ~1.1 while a benchmark alternated its runs (the processes that had just ended),
so one long run was never split there.

The figures come from a /proc/stat the test writes: two snapshots whose idle and I/O-wait ticks it
chose, the cores this process may run on among them; the idle cores expected are worked out here by
hand. A core outside the affinity, and the machine's total line, must not count. On main there was no
such measure (the module did not exist)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zymi_tui.replay.advice import idle_cores, pass_two


def _stat(cores: dict[int, tuple[int, int]]) -> str:
    """A /proc/stat: per core `cpuN user nice system idle iowait irq softirq steal`, the total first."""
    total_idle = sum(i for i, _ in cores.values())
    lines = [f"cpu  9999 0 999 {total_idle * 100} 0 0 0 0 0 0"]
    lines += [f"cpu{n} 500 1 40 {idle} {wait} 0 3 0 0 0" for n, (idle, wait) in sorted(cores.items())]
    return "\n".join([*lines, "intr 12345 0 0", "ctxt 999", "cpuinfo_not_a_core 1 2 3 4 5"]) + "\n"


def test_idle_cores_over_a_span_count_the_usable_cores_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stat = tmp_path / "stat"
    mine = sorted(os.sched_getaffinity(0))
    other = max(mine) + 1  # a core this process may not run on
    stat.write_text(_stat({**{n: (1000, 10) for n in mine}, other: (5000, 0)}))
    monkeypatch.setattr(idle_cores, "PROC_STAT", str(stat))
    clock = idle_cores.IdleClock(idle_cores.idle_ticks(), 100.0)
    assert clock.ticks == len(mine) * 1010
    hz = os.sysconf("SC_CLK_TCK")
    # 2 s later: the first usable core idle the whole time (2*hz ticks, some of them waiting for I/O), the
    # others busy; the other core idle too (not counted)
    after = {n: (1000, 10) for n in mine}
    after[mine[0]] = (1000 + 2 * hz - 7, 10 + 7)
    stat.write_text(_stat({**after, other: (5000 + 2 * hz, 0)}))
    monkeypatch.setattr(idle_cores.time, "monotonic", lambda: 102.0)
    assert clock.idle_cores() == pytest.approx(1.0)
    monkeypatch.setattr(idle_cores.time, "monotonic", lambda: 100.1)  # too soon to tell
    assert clock.idle_cores() is None


def test_no_proc_stat_leaves_the_load_average_to_tell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idle_cores, "PROC_STAT", str(tmp_path / "absent"))
    assert idle_cores.IdleClock.started().idle_cores() is None
    monkeypatch.delenv("ZYMI_TUI_ADVISE_LOAD_BELOW", raising=False)
    monkeypatch.setattr(pass_two.os, "getloadavg", lambda: (1.1, 1.0, 1.0))
    monkeypatch.setattr(pass_two, "usable_cores", lambda: 2)
    assert pass_two.core_free(None) is False  # the load average's rule: 1.1 is not under 2 - 1
    assert pass_two.core_free(0.95) is True  # a core stood idle over pass one, whatever that average says
    assert pass_two.core_free(0.1) is False
