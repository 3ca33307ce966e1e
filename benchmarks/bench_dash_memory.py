"""The dashboard's peak RSS on one store: this checkout against an older one (`--checkout DIR`, e.g. a
`git archive main` copy), alternated in tmux at 120x40, each measured once `verified` is in the banner and
the screen has stopped changing with the process idle (a long run's kinds and plot are read in pages); the
settled screens are compared. Also
the time to `verified` and the CPU seconds the dashboard and its child processes (the chain check's) had used
by then: on two cores the check shares them with the dashboard's start-up, so CPU is what a load cannot blur.

    python benchmarks/bench_dash_memory.py PROJECT --checkout /tmp/before [--rounds 3] [--socket NAME]

PROJECT holds .zymi/events.db (a copy of a benchmark store). Prints the medians and the after/before ratio."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_tui as bt

HERE = Path(__file__).resolve().parent.parent
IDLE_CPU_S = 0.2  # CPU seconds over the 2 s a settled dashboard stays under (its idle aim is 3% of a core)


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (children of any of its threads: the chain check is started by a worker)."""
    try:
        kids = [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]
    except OSError:
        kids = []
    return [pid, *(p for kid in kids for p in process_tree(kid))]


def own_cpu_seconds(pid: int) -> float:
    """User + system time of the process itself (not its children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runs_rows(screen: str) -> list[str]:
    """The runs list's rows on a 120x40 screen (its panel is the left one, framed by `│`)."""
    lines = screen.splitlines()
    top = next((i for i, line in enumerate(lines) if line.startswith("╭─ Runs")), len(lines))
    rows = []
    for line in lines[top + 1 :]:
        if not line.startswith("│"):
            break
        rows.append(line[1:49])
    return [row for row in rows if row.strip()]  # a run's header row and its turns' rows alike


def peak_drawn(row: str) -> bool:
    return " — " not in row  # `—`: no peak yet (format_size(None))


def wait_verified(session: str, pid: int, t0: float, peaks: dict[str, float]) -> tuple[float, float]:
    """(seconds to `verified`, CPU seconds the dashboard and its child processes had used by then: each
    process's own, sampled while it runs, so a chain check that has ended counts as last seen). `peaks`
    gets the seconds at which the top and the bottom row on screen first showed a peak (polled on to 300 s)."""
    seen: dict[int, float] = {}
    verified = cpu = None
    while time.perf_counter() - t0 < 900:
        if verified is None:
            for p in process_tree(pid):
                seen[p] = max(seen.get(p, 0.0), own_cpu_seconds(p))
        screen, now = bt.capture(session), time.perf_counter() - t0
        rows = runs_rows(screen)
        for name, row in (("top", rows[0]), ("bottom", rows[-1])) if rows else ():
            if name not in peaks and peak_drawn(row):
                peaks[name] = now
        if verified is None and "verified" in screen:
            verified, cpu = now, sum(seen.values())
        if verified is not None and (len(peaks) == 2 or now > 300):
            return verified, cpu or 0.0
        time.sleep(0.02)
    raise TimeoutError(f"{session}: no `verified` in 900 s")


def one(project: Path, tree: Path, settle_s: float, peaks: dict[str, float]) -> tuple[float, float, str, float]:
    """(seconds to `verified`, peak RSS MB once settled, the settled screen, CPU seconds at `verified`);
    `peaks`: when the top and bottom rows' peaks were painted."""
    session = f"dashmem-{os.getpid()}"
    cmd = (f"exec env TERM=xterm-256color PYTHONPATH={tree} {sys.executable} -m zymi_tui observe {project} "
           "--theme textual-dark")  # fmt: skip
    t0 = time.perf_counter()
    bt.tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", bt.NEUTRAL_DIR, cmd)
    try:
        pid = bt.pane_pid(session)
        verified, cpu = wait_verified(session, pid, t0, peaks)
        # settled: the screen the same over 2 s and the process idle meanwhile (a long run's kinds and calls are
        # read by workers that can leave the screen unchanged for longer than that: not yet its peak)
        screen, was, end = bt.capture(session), own_cpu_seconds(pid), time.monotonic() + settle_s
        while time.monotonic() < end:
            time.sleep(2)
            now, used = bt.capture(session), own_cpu_seconds(pid)
            if now == screen and used - was < IDLE_CPU_S:
                break
            screen, was = now, used
        return verified, bt.peak_rss_mb(pid), screen, cpu
    finally:
        subprocess.run([*bt.TMUX, "kill-session", "-t", session], capture_output=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("project", type=Path)
    ap.add_argument("--checkout", type=Path, required=True, help="the older checkout (its zymi_tui is run)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--settle", type=float, default=120.0, help="at most this long for the screen to settle")
    ap.add_argument("--socket", help="a tmux server of one's own (tmux -L NAME)")
    ap.add_argument("--save", type=Path, help="write each settled screen into this folder (NAME-ROUND.txt)")
    args = ap.parse_args()
    if args.socket:
        bt.TMUX[:] = ["tmux", "-L", args.socket]
    trees = {"before": args.checkout.resolve(), "after": HERE}
    got: dict[str, list[tuple[float, float, str, float]]] = {k: [] for k in trees}
    loads = []
    painted: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            peaks: dict[str, float] = {}
            got[name].append(one(args.project.resolve(), tree, args.settle, peaks))
            painted[name].append(peaks)
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{name}-{len(got[name])}.txt").write_text(got[name][-1][2])
            time.sleep(1.0)  # the tmux server ends with its last session: a new one started at once can miss it
        loads.append(os.getloadavg()[0])
    for name, rows in got.items():
        rss = [r[1] for r in rows]
        print(f"{name:6} verified {statistics.median(r[0] for r in rows):6.2f} s, CPU then (with the check's "
              f"processes) {statistics.median(r[3] for r in rows):5.2f} s | peak RSS median "
              f"{statistics.median(rss):6.1f} MB {[round(x) for x in rss]}")  # fmt: skip
        for row in ("top", "bottom"):
            at = [p.get(row, float("nan")) for p in painted[name]]
            print(f"{'':6} {row} row's peak painted at {statistics.median(at):6.2f} s {[round(x, 1) for x in at]}")
    ratio = statistics.median(r[1] for r in got["after"]) / statistics.median(r[1] for r in got["before"])
    same = all(a[2] == b[2] for a, b in zip(got["before"], got["after"], strict=True))
    print(f"peak RSS after/before {ratio:.2f} | settled screens the same: {same} | load "
          f"{min(loads):.1f}-{max(loads):.1f} | rounds {args.rounds}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
