"""The sweep on a process pool gives the figures of the one-process sweep and of `replay --set` run
point by point (all as subprocesses, on stores recorded by the real zymi)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE, cloned_runs, zymi_tui_bin

WINDOWS = (2, 6)
CAPS = (2_000, 100_000)  # 2k: several calls over the soft cap, so the caps change the figures
GRID = ["--window", ",".join(map(str, WINDOWS)), "--soft-cap", ",".join(map(str, CAPS))]


def _run(*argv: str) -> str:
    done = subprocess.run([zymi_tui_bin(), *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _sweep(store: str, workers: int, *more: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(_run("sweep", store, "--json", "--workers", str(workers), *GRID, *more))
    return out


def _replayed(store: str, window: int, cap: int, hard_cap: int, *more: str) -> dict[str, int]:
    """The figures of one grid point, counted from the per-call lines of `replay --set`."""
    lines = _run(
        "replay", store, "--json", "--set", f"observation_window={window}", "--set", f"soft_cap_chars={cap}",
        "--set", f"hard_cap_chars={hard_cap}", *more,
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


def test_a_sweep_over_runs_one_after_another_sums_each_runs_figures(tmp_path: Path) -> None:
    """Four copies of a run, one after another: within each, the 2k soft cap compacts where 100k does
    not, so those points part and (between runs) meet again; every point is still its own replay,
    and exactly four times the sweep of the run alone."""
    project = ("--project", str(ORACLE / "coding_default" / "project"))
    store = str(cloned_runs(tmp_path, 4))
    pooled, alone = _sweep(store, 2, *project), _sweep(store, 1, *project)
    assert pooled == alone
    once = _sweep(str(ORACLE / "coding_default"), 1, *project)["points"]
    summed = ("tokens_sum", "over_soft_cap", "compactions_simulated", "hard_cap_failures", "cache_breaks",
              "cached_tokens_modelled")  # fmt: skip
    for point, single in zip(pooled["points"], once, strict=True):
        assert {k: point[k] for k in summed} == {k: 4 * single[k] for k in summed}, point
        assert (point["tokens_peak"], point["chars_peak"]) == (single["tokens_peak"], single["chars_peak"])
        figures = _replayed(store, point["observation_window"], point["soft_cap_chars"], point["hard_cap_chars"],
                            *project)  # fmt: skip
        assert {k: point[k] for k in figures} == figures, point
    assert any(p["compactions_simulated"] for p in once) and not all(p["compactions_simulated"] for p in once)


def test_a_chat_swept_where_its_steps_outlive_each_turn_equals_replay_per_point() -> None:
    """One chat step stream goes on across 16 runs (turns): the soft caps part its points within the
    step, and they must not meet again at a turn's run events while the step lives on."""
    store = str(ORACLE / "chat_profile")
    grid = ("--window", "2,6", "--soft-cap", "1000,3000,100000")
    points = json.loads(_run("sweep", store, "--json", "--workers", "1", *grid))["points"]
    for point in points:
        figures = _replayed(store, point["observation_window"], point["soft_cap_chars"], point["hard_cap_chars"])
        assert {k: point[k] for k in figures} == figures, point
    assert len({p["compactions_simulated"] for p in points}) > 2  # the caps part the points


def _usage_count(scenario: str, where: str) -> int:
    """LlmCallCompleted rows reporting usage (and `where`), counted by SQL on the recorded store."""
    with sqlite3.connect(f"file:{ORACLE / scenario / 'events.db'}?mode=ro", uri=True) as con:
        sql = "SELECT COUNT(*) FROM events WHERE kind_tag = 'llm_call_completed' AND "
        return int(con.execute(sql + "json_extract(data, '$.kind.data.usage') IS NOT NULL AND " + where).fetchone()[0])


def test_the_ratio_is_calibrated_on_the_recorded_calls_the_basis_profile_sends() -> None:
    """The workers get the tokens-per-byte ratio from the parent, which reads it from the store's
    recorded calls alone: with the recorded knobs in the grid every call counts, compaction calls too;
    without them (a what-if basis) only the agent calls. Either way as the one-process sweep."""
    store = str(ORACLE / "coding_compaction")
    grid = ("--window", "2,10", "--soft-cap", "8000,100000")  # w10/s8000 (hard 40000): the recorded knobs
    recorded = json.loads(_run("sweep", store, "--json", "--workers", "2", *grid))
    assert recorded == json.loads(_run("sweep", store, "--json", "--workers", "1", *grid))
    whatif = _sweep(store, 2)
    assert whatif == _sweep(store, 1)
    every, agent = _usage_count("coding_compaction", "1"), _usage_count("coding_compaction", "source != 'compaction'")
    assert every > agent > 0
    assert recorded["tokens_ratio_source"] == f"calibrated on {every} recorded call(s)"
    assert whatif["tokens_ratio_source"] == f"calibrated on {agent} recorded call(s)"
