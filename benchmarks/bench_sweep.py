"""The 7x5 sweep (observation_window x soft_cap_chars) against one replay of the same store, both as
the user runs them (`zymi-tui sweep --json`, `zymi-tui replay --json`, whole processes, output to
/dev/null), alternated in one run; median (min) of the repeats and the ratio sweep / one replay, and
the peak RSS of the largest process of each (a sweep's biggest worker, or its parent).

    python3 /work/shared/tools/make_big_store.py /tmp/s2/coding_100k.db --events 100000 --from coding_default
    .venv/bin/python benchmarks/bench_sweep.py --store /tmp/s2/coding_100k.db --repeat 3
    .venv/bin/python benchmarks/bench_sweep.py --store ... --workers 1   # the one-process sweep, for "before"
    .venv/bin/python benchmarks/bench_sweep.py --store ... --checkout /tmp/old   # and an older checkout's sweep

The project defaults to the recorded coding_default project (shared/oracle) the store was cloned from.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bin() -> str:
    beside = Path(sys.executable).parent / "zymi-tui"
    return str(beside) if beside.exists() else "zymi-tui"


# runs the command and prints its wall time and the peak RSS (KiB) of its largest process, workers included
MEASURE = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def timed(argv: list[str], cwd: str | None = None, peaks: list[float] | None = None) -> float:
    done = subprocess.run([sys.executable, "-c", MEASURE, *argv], check=True, capture_output=True, text=True, cwd=cwd)
    seconds, kib = done.stdout.split()
    if peaks is not None:
        peaks.append(int(kib) / 1024)
    return float(seconds)


def shown(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s ({min(values):.1f})"


def mb(values: list[float]) -> str:
    return f"peak RSS {statistics.median(values):.0f} MB ({min(values):.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--store", type=Path, required=True, help="a store made by shared/tools/make_big_store.py")
    ap.add_argument("--project", type=Path, default=Path("/work/shared/oracle/coding_default/project"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, help="the sweep's --workers (default: its own, one per CPU)")
    ap.add_argument("--checkout", type=Path, help="also time the sweep of the zymi_tui package in this folder (before)")
    a = ap.parse_args()
    common = [str(a.store), "--project", str(a.project), "--json"]
    replay = [_bin(), "replay", *common]
    sweep = [_bin(), "sweep", *common, *(["--workers", str(a.workers)] if a.workers else [])]
    # `python -m` from the checkout's folder runs that checkout's package
    before = [sys.executable, "-m", "zymi_tui", *sweep[1:]]
    ones: list[float] = []
    grids: list[float] = []
    olds: list[float] = []
    rss: dict[str, list[float]] = {"replay": [], "sweep": [], "old": []}
    for _ in range(a.repeat):
        ones.append(timed(replay, peaks=rss["replay"]))
        grids.append(timed(sweep, peaks=rss["sweep"]))
        if a.checkout:
            olds.append(timed(before, str(a.checkout.resolve()), rss["old"]))
    ratio = statistics.median(grids) / statistics.median(ones)
    workers = a.workers or os.cpu_count()
    print(f"store {a.store.name}; {a.repeat} repeats, alternated; CPUs {os.cpu_count()}, sweep workers {workers}")
    print(f"one replay (replay --json):   {shown(ones)}   {mb(rss['replay'])}")
    print(f"7x5 sweep (sweep --json):     {shown(grids)}   {mb(rss['sweep'])}")
    print(f"sweep / one replay: {ratio:.1f}x median, {min(grids) / min(ones):.1f}x min (aim <= 10x)")
    if olds:
        print(
            f"7x5 sweep of {a.checkout}: {shown(olds)} = {statistics.median(olds) / statistics.median(ones):.1f}x "
            f"one replay (median), this one {statistics.median(olds) / statistics.median(grids):.1f}x faster; "
            f"{mb(rss['old'])}"
        )


if __name__ == "__main__":
    main()
