"""A soak of one SQLite store under chaos, for as long as asked (issue 29).

    .venv/bin/python benchmarks/soak_store.py 600 [--seed N] [--keep DIR]

Rounds of tests/chaos.py one after another for DURATION seconds: writers (`zymi-tui run`, `zymi run`,
appenders through our writer), readers (`events --follow`, `verify` and `runs` in a loop), SIGKILL
and SIGINT at random moments; after each round, the invariants: `integrity_check` ok, every run that
exited 0 listed by both `runs`, every event an appender saw appended in the store, both verifiers
pass. Prints the seed first (replay with --seed), one line per round, then the totals; exits 1 at
the first round that breaks an invariant, keeping the store (in --keep, else a folder it names).
The suite runs a few short rounds of the same (tests/test_store_chaos.py).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.chaos import ZYMI, chaos


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("duration", type=float, help="seconds during which new rounds are started")
    ap.add_argument("--seed", type=int, help="replay the rounds of this seed (default: a new one)")
    ap.add_argument("--keep", help="a folder to make the project and store in (kept); default: a temporary one")
    a = ap.parse_args()
    if not Path(ZYMI).exists():
        print(f"soak_store: no zymi beside this Python ({ZYMI}): pip install -e '.[test]'", file=sys.stderr)
        return 2
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"soak seed {seed} (replay: benchmarks/soak_store.py {a.duration:g} --seed {seed})", flush=True)
    root = Path(a.keep).resolve() if a.keep else Path(tempfile.mkdtemp(prefix="soak_store_"))
    project = root / "project"
    if project.exists():
        print(f"soak_store: {project} already exists: pass an empty --keep folder", file=sys.stderr)
        return 2
    started = time.monotonic()
    rounds = chaos(project, seed, rounds=1 << 30, seconds=a.duration, log=lambda line: print(line, flush=True))
    took = time.monotonic() - started
    runs, appended = sum(r.runs_ok for r in rounds), sum(r.appended for r in rounds)
    signals = sum(len(p.sent) for r in rounds for p in r.procs)
    print(f"{len(rounds)} round(s) in {took:.0f} s: {runs} run(s) exited 0 and listed, {appended} appended "
          f"event(s) found, {signals} signal(s) sent")  # fmt: skip
    failed = [r for r in rounds if r.problems]
    if failed:
        print(f"FAILED (seed {seed}) in {failed[0].summary()}:", file=sys.stderr)
        for line in failed[0].problems:
            print(f"  {line}", file=sys.stderr)
        print(f"the store is kept: {project / '.zymi' / 'events.db'}", file=sys.stderr)
        return 1
    print("every invariant held after every round")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
