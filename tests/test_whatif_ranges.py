"""What-ifs on the process pool (`advise`, `compare`, `sweep`): the store cut into ranges that replay
independently, each range replayed by one worker, give exactly the figures of the one-process replay;
the cuts checked by SQL on the store; Ctrl-C while the workers run leaves no process behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE, cloned_runs, zymi_tui_bin
from tests.leftovers import command_line, descendants, group
from zymi_tui.commands.tuning_cmds import profile_knobs
from zymi_tui.engine.tool_catalog import definition_bytes
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import location_of
from zymi_tui.replay.advice import advise, to_json
from zymi_tui.replay.compare_report import to_json_text
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.replay.sweep import sweep
from zymi_tui.replay.sweep_pool import _ranges
from zymi_tui.replay.whatifs import compare_store

CLONES = 6


def _spans(db: Path) -> list[tuple[str, int, int]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute("SELECT stream_id, MIN(id), MAX(id) FROM events GROUP BY stream_id").fetchall()
    return [(s, int(lo), int(hi)) for s, lo, hi in rows]


def test_the_ranges_cover_the_store_and_no_stream_spans_a_cut(tmp_path: Path) -> None:
    db = cloned_runs(tmp_path, CLONES, "coding_compaction")
    ranges = asyncio.run(_ranges(location_of(str(db)), 2))
    spans = _spans(db)
    top = max(hi for _, _, hi in spans)
    assert len(ranges) == 4  # 2 workers x 2 ranges each: a store of runs one after another has places
    assert ranges[0][0] == 0 and ranges[-1][1] == top
    assert all(a[1] == b[0] for a, b in pairwise(ranges))  # contiguous
    for _, cut in ranges[:-1]:
        assert not [s for s, lo, hi in spans if lo <= cut < hi], cut  # every stream on one side


def test_one_long_run_is_one_range() -> None:
    db = ORACLE / "coding_compaction" / "events.db"
    top = max(hi for _, _, hi in _spans(db))
    assert asyncio.run(_ranges(location_of(str(db)), 2)) == [(0, top)]


async def _whatifs(db: Path, project: Path, workers: int) -> dict[str, Any]:
    """compare (per run), a sweep whose small soft caps simulate compactions, and advise: on `workers`."""
    location = location_of(str(db))
    base = recorded_knobs(project)
    reader = await open_reader(location)
    try:
        last = await reader.max_global_id()
        profiles = [(n, profile_knobs(n, base)) for n in ("recorded", "chat", "coding")]
        cmp = await compare_store(reader, project, profiles, recorded_knobs=base, last_global_id=last,
                                  location=location, workers=workers)  # fmt: skip
        grid = await sweep(reader, project, base, (2, 10), (2_000, 8_000, 100_000), recorded_knobs=base,
                           last_global_id=last, location=location, workers=workers)  # fmt: skip
        advice = await advise(reader, project, tool_bytes=definition_bytes, location=location, workers=workers)
    finally:
        await reader.close()
    return {"compare": json.loads(to_json_text(cmp)), "sweep": grid.to_json(), "advise": to_json(advice)}


@pytest.mark.parametrize("scenario", ["coding_compaction", "coding_default"])
def test_the_pool_gives_the_figures_of_one_process(tmp_path: Path, scenario: str) -> None:
    """Runs one after another, cut into ranges: every figure as the one-process replay makes it. On
    coding_compaction the what-ifs' simulated summaries take their size from the summaries recorded
    before them, in earlier runs too (a range's replay learns them first)."""
    db = cloned_runs(tmp_path, CLONES, scenario)
    project = ORACLE / scenario / "project"
    pooled, alone = asyncio.run(_whatifs(db, project, 2)), asyncio.run(_whatifs(db, project, 1))
    assert pooled == alone
    runs = pooled["compare"]["profiles"][0]["runs"]
    assert len(runs) == CLONES
    simulated = {p["compactions_simulated"] for p in pooled["sweep"]["points"]}
    assert len(simulated) > 1  # the caps part the points: some what-ifs compact where the recording did not
    assert pooled["advise"]["tried"] > 1


def _workers(pid: int) -> list[int]:
    """The pool's worker processes below `pid`."""
    return [child for child in descendants(pid) if "spawn_main" in command_line(child)]


def test_ctrl_c_while_advise_replays_on_the_pool_leaves_no_process(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the foreground process group, as a terminal sends it) once the workers run:
    the one interrupted line, its exit code, and every process of the group gone."""
    db = cloned_runs(tmp_path, 130, "coding_default")  # 22,620 events
    proc = subprocess.Popen([zymi_tui_bin(), "advise", str(db), "--workers", "2"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while len(_workers(proc.pid)) < 2:
            assert proc.poll() is None, "advise ended before its workers started"
            assert time.monotonic() < deadline, "no worker started"
            time.sleep(0.05)
        workers = _workers(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert err.decode().strip().splitlines() == ["interrupted (Ctrl-C)"], err
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if Path(f"/proc/{w}").exists()]
    while group(proc.pid) and time.monotonic() < deadline:  # multiprocessing's resource tracker ends too
        time.sleep(0.05)
    assert not group(proc.pid), [Path(f"/proc/{p}/cmdline").read_bytes() for p in group(proc.pid)]
