"""What reading a project's config costs a process, and what the validating library costs.

    .venv/bin/python benchmarks/bench_config.py [--checkout DIR] [--runs 15]

1. A fresh process that loads the oracle project `coding_default` (project.yml, agents, pipelines, and its
   runtime.context knobs) with `load_workspace`: the median wall time of the process, and of the load
   alone inside it, for this checkout and (`--checkout DIR`, a `git archive main` copy, say) another one,
   alternating, in the same run; ratio ours / checkout.
2. The library choice: a process that imports the library, declares two small config types and validates
   one document, with msgspec (strict structs with `Meta` bounds) and with pydantic (strict models with
   `Field` bounds), against a bare `python -c pass`; the median wall time of each, minus the bare one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "tests" / "oracle" / "coding_default" / "project"

LOAD = """
import time, sys
t = time.perf_counter()
from pathlib import Path
from zymi_tui.engine.loader import load_workspace
ws = load_workspace(Path(sys.argv[1]), {})
from zymi_tui.context.knobs import section_knobs
section_knobs(ws.project.runtime.context if ws.project.runtime else None, Path(sys.argv[1]) / "project.yml")
print(time.perf_counter() - t)
"""
MSGSPEC = """
from typing import Annotated
import msgspec
class Defaults(msgspec.Struct, kw_only=True):
    timeout_secs: Annotated[int, msgspec.Meta(ge=0)] = 30
    max_iterations: Annotated[int, msgspec.Meta(ge=0)] = 10
class Agent(msgspec.Struct, kw_only=True):
    name: str
    tools: list[str] = msgspec.field(default_factory=list)
    defaults: Defaults = msgspec.field(default_factory=Defaults)
msgspec.convert({"name": "a", "tools": ["x"], "defaults": {"timeout_secs": 3}}, Agent, strict=True)
"""
PYDANTIC = """
from typing import Annotated
from pydantic import BaseModel, ConfigDict, Field
class Defaults(BaseModel):
    model_config = ConfigDict(strict=True)
    timeout_secs: Annotated[int, Field(ge=0)] = 30
    max_iterations: Annotated[int, Field(ge=0)] = 10
class Agent(BaseModel):
    model_config = ConfigDict(strict=True)
    name: str
    tools: list[str] = Field(default_factory=list)
    defaults: Defaults = Field(default_factory=Defaults)
Agent.model_validate({"name": "a", "tools": ["x"], "defaults": {"timeout_secs": 3}})
"""


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env, cwd="/")
    return time.perf_counter() - start, done.stdout.strip()


def load_figures(runs: int, checkout: Path | None) -> None:
    engines: dict[str, dict[str, str]] = {"ours": {**os.environ, "PYTHONPATH": str(ROOT)}}
    if checkout is not None:
        engines["checkout"] = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    walls: dict[str, list[float]] = {name: [] for name in engines}
    loads: dict[str, list[float]] = {name: [] for name in engines}
    for i in range(runs + 1):
        for name, env in engines.items() if i % 2 else reversed(engines.items()):
            wall, out = timed([sys.executable, "-c", LOAD, str(PROJECT)], env)
            if i:  # the first round warms the bytecode caches
                walls[name].append(wall)
                loads[name].append(float(out))
    print(f"1. a process that loads {PROJECT.parent.name}'s project and knobs, {runs} runs each, median (min) ms")
    for name in engines:
        print(f"   {name:9} process {statistics.median(walls[name]) * 1e3:7.1f} ({min(walls[name]) * 1e3:.1f})"
              f"   load alone {statistics.median(loads[name]) * 1e3:6.1f} ({min(loads[name]) * 1e3:.1f})")  # fmt: skip
    if checkout is not None:
        ratio = statistics.median(loads["ours"]) / statistics.median(loads["checkout"])
        print(f"   load alone, ours / checkout: {ratio:.2f}x")


def library_figures(runs: int) -> None:
    codes = {"bare": "pass", "msgspec": MSGSPEC, "pydantic": PYDANTIC}
    walls: dict[str, list[float]] = {name: [] for name in codes}
    for i in range(runs + 1):
        for name, code in codes.items():
            wall, _ = timed([sys.executable, "-c", code])
            if i:
                walls[name].append(wall)
    bare = statistics.median(walls["bare"])
    print(f"2. a process that imports the library, declares two config types, validates one ({runs} runs)")
    for name in ("msgspec", "pydantic"):
        print(f"   {name:9} {(statistics.median(walls[name]) - bare) * 1e3:6.1f} ms over a bare python "
              f"({bare * 1e3:.1f} ms)")  # fmt: skip
    ratio = (statistics.median(walls["pydantic"]) - bare) / (statistics.median(walls["msgspec"]) - bare)
    print(f"   pydantic / msgspec: {ratio:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", type=Path, help="also load with the zymi_tui package of this folder (a 'before')")
    ap.add_argument("--runs", type=int, default=15, help="processes of each kind (default 15)")
    a = ap.parse_args()
    load_figures(a.runs, a.checkout)
    library_figures(a.runs)


if __name__ == "__main__":
    main()
