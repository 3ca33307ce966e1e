"""`verify STORE`'s peak RSS on a small and a large store of one shape (issue 34's flat-memory rule: at 1M events
within 1.3x of at 100k), this checkout against an older one (`--checkout DIR`, e.g. a `git archive main` copy),
whole processes alternated; peak RSS is ru_maxrss from os.wait4 (the process and its reaped children: the later
part of a split scan is one), CPU the child's user+sys.

    python benchmarks/bench_verify_memory.py SMALL LARGE --checkout /tmp/before [--rounds 2]

Prints each tree's largest peak and median CPU on each store, and its LARGE/SMALL peak ratio against 1.3."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
FLAT = 1.3  # issue 34: peak RSS at 1M events within this of at 100k


def measure(tree: Path, store: str) -> tuple[float, float]:
    """(peak RSS in MB, CPU s) of `python -m zymi_tui verify STORE` run from `tree`."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.Popen(
        [sys.executable, "-m", "zymi_tui", "verify", store],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"verify {store} from {tree} ended with status {status}")
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("small", help="a store of ~100k events")
    p.add_argument("large", help="a store of the same shape, ~1M events")
    p.add_argument("--checkout", type=Path, required=True, help="the tree to compare with (compiled: compileall)")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    trees = {"before": args.checkout.resolve(), "after": HERE}
    got: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for store in (args.small, args.large):
            for name, tree in trees.items():
                got.setdefault((name, store), []).append(measure(tree, store))
    for name in trees:
        peaks = {}
        for store in (args.small, args.large):
            runs = got[(name, store)]
            peaks[store] = max(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            print(f"{name:6} {Path(store).name:16} peak {peaks[store]:6.1f} MB  CPU {cpu:5.2f} s  ({len(runs)} runs)")
        ratio = peaks[args.large] / peaks[args.small]
        print(f"{name:6} large/small peak {ratio:.2f} ({'within' if ratio <= FLAT else 'over'} {FLAT})")
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
