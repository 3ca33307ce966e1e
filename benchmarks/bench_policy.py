#!/usr/bin/env python3
"""What the stricter gate costs (README "Security").

    .venv/bin/python benchmarks/bench_policy.py [--repeat 200] [--sessions 20]

1. The verdict on each command of the escape table and the plain commands of
   tests/test_engine_escapes.py, on a project made by `zymi-tui init` (a `.env`, links in and out):
   the whole gate (`Contracts.shell_command`: zymi's rules, the parse, the expansion, the paths
   resolved, the recursive readers' trees walked) against zymi's rules alone (`ShellPolicy.decide`),
   measured in the same run: median microseconds per command, and the ratio.
2. Starting the agent's shell: bash under bubblewrap (engine/sandbox.py) against bash alone, until it
   answers its first command (the time one run pays once per stream): median milliseconds, and the
   ratio. Skipped, with the reason, where bwrap cannot run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_engine_escapes import ESCAPES, PLAIN, make_project  # noqa: E402
from zymi_tui.engine.config import ShellRuntime  # noqa: E402
from zymi_tui.engine.loader import load_workspace  # noqa: E402
from zymi_tui.engine.policy import Contracts  # noqa: E402
from zymi_tui.engine.sandbox import bwrap_problem, make_sandbox  # noqa: E402
from zymi_tui.engine.shell import ShellSession  # noqa: E402


def per_command(fn: object, commands: list[str], repeat: int) -> float:
    """Median over `repeat` rounds of the mean microseconds per command."""
    assert callable(fn)
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for command in commands:
            fn(command)
        rounds.append((time.perf_counter() - start) / len(commands) * 1e6)
    return statistics.median(rounds)


async def shell_start(root: Path, prefix: tuple[str, ...], n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        session = await ShellSession.start(ShellRuntime(), root, prefix)
        await session.run("true", 10)
        times.append((time.perf_counter() - start) * 1000)
        await session.close()
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=200, help="rounds over the command table (default 200)")
    ap.add_argument("--sessions", type=int, default=20, help="shells started for part 2 (default 20)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-policy-") as tmp:
        ws = load_workspace(make_project(Path(tmp)))
        contracts = Contracts(ws.project.policy, ws.project.contracts.file_write, ws.root)
        commands = [c for c, _ in ESCAPES] + PLAIN
        contracts.shell_command("ls .")  # bashlex loaded before timing
        gate = per_command(contracts.shell_command, commands, args.repeat)
        rules = per_command(contracts.shell.decide, commands, args.repeat)
        print(f"1. verdict per command ({len(commands)} commands, median of {args.repeat} rounds)")
        print(f"   zymi's rules alone: {rules:8.1f} us")
        print(f"   the whole gate:     {gate:8.1f} us   ({gate / rules:.1f}x zymi's rules)")
        problem = bwrap_problem(shutil.which("bwrap"))
        print(f"2. shell start until it answers (median of {args.sessions})")
        if problem is not None:
            print(f"   skipped: {problem}")
            return
        box = make_sandbox(ws.root, ws.project.contracts.file_write.allowed_dirs, ShellRuntime())
        plain = asyncio.run(shell_start(ws.root, (), args.sessions))
        boxed = asyncio.run(shell_start(ws.root, box.prefix, args.sessions))
        print(f"   bash:               {plain:8.1f} ms")
        print(f"   bash in bubblewrap: {boxed:8.1f} ms   ({boxed / plain:.1f}x bash)")


if __name__ == "__main__":
    main()
