#!/usr/bin/env python3
"""Fork-resume benchmark (demo model, no network).

    .venv/bin/python benchmarks/bench_resume.py [--frozen-steps 8] [--repeat 3]

A chain of N gather steps (each reads every module: a large frozen prefix) and one short report
step. Measured in the same run:
- baseline: a full run of the pipeline (every step re-executed), as a fresh `run` would do;
- fork: `zymi-tui resume --from-step report` done in-process (plan, read and copy the frozen prefix
  in one transaction, re-run the report step);
- of which the bootstrap alone (plan + copy), per frozen event.
The ratio fork / full run is what forking saves on the engine side; with a real model the saving is
larger still (the frozen steps make no model calls at all).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from zymi_tui.context.knobs import ContextKnobs  # noqa: E402
from zymi_tui.engine.loader import load_workspace  # noqa: E402
from zymi_tui.engine.providers.demo_workspace import write_demo_project  # noqa: E402
from zymi_tui.engine.resume import KnobChoice, _bootstrap, fork, plan_resume  # noqa: E402
from zymi_tui.engine.runner import run_pipeline  # noqa: E402
from zymi_tui.engine.runtime import close_runtime, open_runtime  # noqa: E402


def pipeline_yaml(n: int) -> str:
    """g0 -> g1 -> ... -> g(n-1) -> report: a chain, so the frozen prefix is n steps run one after another."""
    steps = []
    for i in range(n):
        dep = f"\n    depends_on: [g{i - 1}]" if i else ""
        steps.append(f'  - id: g{i}\n    agent: coder\n    task: "Audit every module, pass {i}"{dep}\n')
    steps.append(f'  - id: report\n    agent: coder\n    task: "Report on billing"\n    depends_on: [g{n - 1}]\n')
    return "name: big\nsteps:\n" + "".join(steps) + "output:\n  step: report\n"


async def measure(root: Path, repeat: int) -> dict[str, list[float]]:
    ws = load_workspace(root)
    out: dict[str, list[float]] = {"run": [], "fork": [], "bootstrap": []}
    events_copied = 0
    for _ in range(repeat):
        rt = await open_runtime(ws, ["big"], None)
        try:
            t0 = time.perf_counter()
            parent = await run_pipeline(rt, "big", {})
            out["run"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            plan = await plan_resume(rt.reader, ws, parent.stream_id, "report")
            boot = await _bootstrap(rt.reader, plan, "bench-probe", "00000000-0000-4000-8000-000000000000",
                                    KnobChoice(rt.knobs))  # fmt: skip
            out["bootstrap"].append(time.perf_counter() - t0)
            events_copied = len(boot.events)
            t0 = time.perf_counter()
            outcome = await fork(rt, plan, KnobChoice(ContextKnobs()))
            out["fork"].append(time.perf_counter() - t0)
            assert outcome.success, outcome.error
        finally:
            await close_runtime(rt)
    out["events"] = [float(events_copied)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frozen-steps", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        write_demo_project(root, "bench")
        (root / "pipelines" / "big.yml").write_text(pipeline_yaml(args.frozen_steps), encoding="utf-8")
        r = asyncio.run(measure(root, args.repeat))
    run, fk, boot = (statistics.median(r[k]) for k in ("run", "fork", "bootstrap"))
    n = int(r["events"][0])
    print(f"frozen steps: {args.frozen_steps}, bootstrap events written per fork: {n}, repeats: {args.repeat}")
    print(f"full run (baseline)        {run * 1000:9.1f} ms")
    print(f"fork at the last step      {fk * 1000:9.1f} ms   ratio fork/run {fk / run:.2f}")
    print(f"  of which plan + copy     {boot * 1000:9.1f} ms   {boot / max(n, 1) * 1e6:.0f} us per frozen event")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
