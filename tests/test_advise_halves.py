"""`advise` on two cores replays its candidates in two processes (advice/pass_two_halves.py): this one and a
forked child, a store of many runs cut in two ranges, one long run its candidates dealt in two shares.

Seen from outside the code under test: the interpreter's audit hook counts the forks (`os.fork`), and the
kernel's figures give the CPU time of the children. The advice must be byte for byte the one process's
(`--workers 1`), and each knob set it recommends must have the figures a replay of that knob set alone
gives (`compare_profiles` of the recorded knobs and it, one process, no lockstep). On one usable core
nothing is forked; nor is it for one long run while no core is free (its two shares cost more CPU than one
pass). On main `advise` never forked: the fork count was 0."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE, cloned_runs, long_run_store
from zymi_tui.context.knobs import make_knobs
from zymi_tui.cores import usable_cores
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay.compare import compare_profiles, replay_profiles
from zymi_tui.replay.figures import recorded_output
from zymi_tui.replay.store_replay import recorded_knobs

# the command line's own process (`cli.main()` with no argv), with the forks it makes counted by an audit
# hook and its children's CPU time read from the kernel once they are waited for
OBSERVED = """
import os, resource, sys
if os.environ.get("PASS_ONE_KEEPS_NONE"):  # as from WHATIF_POOL_MIN_EVENTS (500,000) events on
    import zymi_tui.replay.advice.run as advice_run
    advice_run.WHATIF_POOL_MIN_EVENTS = 1
forks = []
sys.addaudithook(lambda event, _args: forks.append(event) if event == "os.fork" else None)
sys.argv = ["zymi-tui", *sys.argv[1:]]
from zymi_tui.cli import main
code = main()
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(code, len(forks), children.ru_utime + children.ru_stime, file=sys.stderr)
"""


def _advise(
    db: Path, project: Path | None, *more: str, load_below: str = "1000", keep: bool = True
) -> tuple[str, int, float]:
    """The JSON advice of the command line, how many processes it forked, and their CPU seconds.
    `load_below`: a long run's candidates are dealt in two below this load average (any, by default);
    `keep=False`: pass one keeps none of its decoded events, as on a store of a million."""
    line = ["advise", str(db), "--json", *(["--project", str(project)] if project else []), *more]
    # an oracle store is far below 20,000 events
    env = {**os.environ, "ZYMI_TUI_ADVISE_HALVES_FROM": "1", "ZYMI_TUI_ADVISE_LOAD_BELOW": load_below}
    if not keep:
        env["PASS_ONE_KEEPS_NONE"] = "1"
    done = subprocess.run([sys.executable, "-c", OBSERVED, *line], capture_output=True, text=True, env=env, timeout=300)
    code, forks, cpu = done.stderr.split()[-3:]
    assert code == "0", done.stderr
    return done.stdout, int(forks), float(cpu)


def _replayed_alone(db: Path, project: Path | None, knobs: dict[str, Any]) -> Any:
    """The totals of `knobs`, replayed beside the recorded knobs in this process."""

    async def main() -> Any:
        reader = await open_reader(SqliteStore(db))
        try:
            profiles = [("recorded", None), ("candidate", make_knobs(dict(knobs), "candidate"))]
            cmp = await compare_profiles(
                replay_profiles(reader, project, profiles), profiles, recorded_knobs=recorded_knobs(project),
                output=await recorded_output(reader),
            )  # fmt: skip
            return cmp.profiles[1].total
        finally:
            await reader.close()

    return asyncio.run(main())


def _store(shape: str, tmp: Path) -> tuple[Path, Path | None]:
    if shape == "many runs":
        return cloned_runs(tmp, 6), ORACLE / "coding_default" / "project"
    return long_run_store(tmp, 3000), None


@pytest.mark.parametrize("keep", [True, False], ids=["pass one's events kept", "pass one's events spilled"])
@pytest.mark.parametrize("shape", ["many runs", "one long run"])
def test_the_candidates_are_replayed_in_two_processes_with_the_one_process_advice(
    shape: str, keep: bool, tmp_path: Path
) -> None:
    """Below a million events, from pass one's decoded events; from there (`keep=False`) each process reads
    its half from the file pass one set its events down in (`SpilledEvents`)."""
    db, project = _store(shape, tmp_path)
    split, forks, child_cpu = _advise(db, project, keep=keep)
    alone, forks_alone, _ = _advise(db, project, "--workers", "1", keep=keep)
    assert forks_alone == 0
    if usable_cores() < 2:
        assert forks == 0  # one core: nothing runs beside this process
    elif shape == "one long run" and not keep:
        # each share would replay the whole file again: one pass costs less (and with no project, no
        # cache model: pass one sums its tokens per byte itself, test_advise_sums_forked.py)
        assert forks == 0
    else:
        # (keep=False: and the tokens per byte summed beside pass one, the project's provider giving a
        # cache model)
        assert forks == (1 if keep else 2)
        assert child_cpu > 0.01  # the child replayed its half
    assert split == alone
    advice = json.loads(split)
    assert advice["tried"] > 1  # several candidates: two shares (one long run), or each replayed in both ranges
    effects = [rec for f in advice["findings"] if (rec := f.get("recommendation")) and rec["effect"]]
    effects += [advice["best"]] if advice["best"] else []
    assert effects  # some knob set was recommended: its figures are checked against its replay alone
    for rec in effects:
        after, effect = _replayed_alone(db, project, rec["knobs"]), rec["effect"]
        assert (effect["tokens_sum"], effect["chars_sum"], effect["chars_peak"]) == (
            after.tokens_sum,
            after.chars_sum,
            after.chars_peak,
        )
        assert (effect["cache_breaks"], effect["hard_cap_failures"]) == (after.cache_breaks, after.hard_cap_failures)


def test_one_long_run_is_replayed_in_one_process_while_no_core_is_free(tmp_path: Path) -> None:
    db, project = _store("one long run", tmp_path)
    busy, forks, child_cpu = _advise(db, project, load_below="0")
    assert (forks, child_cpu) == (0, 0.0)
    assert busy == _advise(db, project, "--workers", "1")[0]
