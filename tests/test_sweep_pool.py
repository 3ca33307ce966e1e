"""The sweep on a process pool gives the figures of the one-process sweep and of `replay --set` run
point by point (all as subprocesses, on stores recorded by the real zymi)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.conftest import ORACLE, zymi_tui_bin

WINDOWS = (2, 6)
CAPS = (2_000, 100_000)  # 2k: several calls over the soft cap, so the caps change the figures
GRID = ["--window", ",".join(map(str, WINDOWS)), "--soft-cap", ",".join(map(str, CAPS))]


def _run(*argv: str) -> str:
    done = subprocess.run([zymi_tui_bin(), *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _sweep(store: str, workers: int) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(_run("sweep", store, "--json", "--workers", str(workers), *GRID))
    return out


def _replayed(store: str, window: int, cap: int, hard_cap: int) -> dict[str, int]:
    """The figures of one grid point, counted from the per-call lines of `replay --set`."""
    lines = _run(
        "replay", store, "--json", "--set", f"observation_window={window}", "--set", f"soft_cap_chars={cap}",
        "--set", f"hard_cap_chars={hard_cap}",
    ).splitlines()  # fmt: skip
    calls = [c for c in map(json.loads, lines) if "kind" in c]  # the last line is the run's summary
    sent = [c for c in calls if not c["hard_cap_exceeded"]]
    agent = [c for c in sent if c["kind"] == "agent"]
    return {
        "chars_peak": max((c["chars"] for c in agent), default=0),
        "over_soft_cap": sum(c["chars"] > cap for c in agent),
        "compactions_simulated": sum(bool(c["simulated"]) for c in sent),
        "hard_cap_failures": len(calls) - len(sent),
    }


@pytest.mark.parametrize("scenario", ["coding_default", "coding_compaction"])
def test_pool_sweep_equals_the_sequential_sweep_and_replay_per_point(scenario: str) -> None:
    store = str(ORACLE / scenario)
    pooled, alone = _sweep(store, 2), _sweep(store, 1)
    assert pooled == alone
    points = pooled["points"]
    assert [(p["observation_window"], p["soft_cap_chars"]) for p in points] == [(w, c) for w in WINDOWS for c in CAPS]
    for point in points:
        figures = _replayed(store, point["observation_window"], point["soft_cap_chars"], point["hard_cap_chars"])
        assert {k: point[k] for k in figures} == figures, point
    assert len({json.dumps(p, sort_keys=True) for p in points}) > 1  # the grid is not degenerate
