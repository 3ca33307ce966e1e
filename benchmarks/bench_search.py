"""The events search (`/`) on a long run, as a person sees it: from Enter to the first hits shown in the
events list, and to the search done; ours against an older checkout's, alternated in one run, median
(min) of the repeats.

    .venv/bin/python benchmarks/bench_search.py --store /tmp/speed/long_100k.db --needle mod_03 \\
        --repeat 3 [--checkout /tmp/old]

Each measurement is a fresh process driving the dashboard with Textual's Pilot (120x40): the run is
selected and drawn, the search typed, Enter pressed; the clock runs from Enter. "First hits shown" is
the events list holding a hit (the rows already drawn are searched at once; a worker reads the rest of
the run page by page), "done" the worker's last page handled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


async def measure(store: Path, needle: str) -> dict[str, Any]:
    # the test helpers are found last: `zymi_tui` itself is the checkout on PYTHONPATH (or this one, installed)
    sys.path.append(str(ROOT))
    import zymi_tui
    from tests.tui_support import make_app, settle

    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot.press("tab", "slash", *needle)
        started = time.perf_counter()
        pressing = asyncio.ensure_future(pilot.press("enter"))  # polled meanwhile: press returns once idle
        first = done = None
        while done is None:
            await asyncio.sleep(0.005)
            if first is None and main.events.visible_count > 0:
                first = time.perf_counter() - started
            if pressing.done() and not main.searching_run:
                done = time.perf_counter() - started
        return {
            "first": first if first is not None else done,
            "done": done,
            "hits": main.events.visible_count,
            "package": str(Path(zymi_tui.__file__).parent),
        }


def run(store: Path, needle: str, checkout: Path | None) -> dict[str, Any]:
    """One measurement in a fresh process, started from a neutral folder (the current folder comes first on
    sys.path: started from a checkout, the child would import that checkout's package)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)} if checkout else dict(os.environ)
    child = [sys.executable, str(Path(__file__).resolve()), "--child", "--store", str(store.resolve()),
             "--needle", needle]  # fmt: skip
    out = subprocess.run(child, capture_output=True, text=True, check=True, env=env, cwd=tempfile.gettempdir())
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def shown(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--needle", default="mod_03")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--checkout", type=Path, help="also measure the zymi_tui package in this folder (before)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(asyncio.run(measure(a.store, a.needle))))
        return
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    for _ in range(a.repeat):
        ours.append(run(a.store, a.needle, None))
        if a.checkout:
            theirs.append(run(a.store, a.needle, a.checkout.resolve()))
    print(f"search “{a.needle}” on {a.store.name}: {a.repeat} repeats, alternated; hits {ours[0]['hits']:.0f}")
    for name, got in (("this checkout", ours), (str(a.checkout), theirs)):
        if got:
            first, done = [g["first"] for g in got], [g["done"] for g in got]
            print(f"  {name} ({got[0]['package']}, hits {got[0]['hits']:.0f}): Enter -> first hits shown "
                  f"{shown(first)}, -> search done {shown(done)}")  # fmt: skip
    if theirs:
        for what in ("first", "done"):
            ratio = statistics.median(g[what] for g in ours) / statistics.median(g[what] for g in theirs)
            print(f"  {'first hits' if what == 'first' else 'search done'}: this / before = {ratio:.2f}")


if __name__ == "__main__":
    main()
