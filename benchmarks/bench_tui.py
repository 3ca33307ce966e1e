"""Benchmark the dashboard against `zymi observe` on the same generated store, in tmux, as a person sees it.

    .venv/bin/python benchmarks/bench_tui.py [--events 99000] [--from memory] [--idle 10] [--keys 30] [--repeat 3]
    .venv/bin/python benchmarks/bench_tui.py --project /tmp/big  # a folder holding .zymi/events.db (reused)
    .venv/bin/python benchmarks/bench_tui.py --project /tmp/big --checkout /tmp/old  # + another checkout's package

Both programs run in a detached tmux pane of 120x40, alternated (ours, zymi, ours, zymi, ...) so both
see the same machine load; each figure is the median (and min) of --repeat launches. Figures, for each:
- first frame: from launch until the pane shows its first frame (ours: the banner's `· live`);
- runs with status: until the title counts every run (`Runs (N)`) and a `✓ main` row is drawn;
- runs listed: until the runs list shows its first screenful of runs (ours: titled `Runs (newest N…)` while
  the rest is read, then `Runs (N)`); runs all listed: until its title counts every run;
- idle CPU: user+system time of the process over --idle seconds with no input, as % of one core;
- key-to-redraw p50/p95: `j` sent to the runs list (and then to the events list), until the pane changes;
- peak RSS (VmHWM);
- runs listed CPU: the CPU seconds the process (and the children it has waited for: ours reads the newest runs in
  one while the screen loads) had used when its first runs were seen (a loaded machine stretches wall time far
  more than CPU time; compare both); startup done CPU: those CPU seconds at "verified" (ours, the chain check's
  process included; zymi: at its first frame).
The store is made by /work/shared/tools/make_big_store.py (cloned oracle runs, valid hash chains).
`--checkout DIR` also launches the zymi_tui package of DIR (`python -m zymi_tui` with DIR on PYTHONPATH), alternated
with the others: a "before" figure measured in the same run.
`--floor` also launches an empty Textual app (one Static, this venv's Textual) until its text is on screen:
the start-up any Textual app pays (interpreter, `import textual.app`, driver, first frame), in the same run.
Each package measured is byte-compiled first (`compileall`, as `pip install` does): a launch reads its
modules' bytecode, as a person's second launch does, even where PYTHONDONTWRITEBYTECODE is set.
Ratios are zymi observe / zymi-tui (higher is better for us). tmux polling adds ~2-5 ms to each latency.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAKE_STORE = Path("/work/shared/tools/make_big_store.py")
VENV = ROOT / ".venv" / "bin"
SIZE = (120, 40)

# every program starts here: `python -m zymi_tui` (the --checkout launch) puts the current folder first on
# sys.path, so started from a checkout it would import that checkout's package instead of the one meant
NEUTRAL_DIR = tempfile.gettempdir()


TMUX = ["tmux"]  # ["tmux", "-L", NAME] with --socket NAME: a tmux server of one's own


def tmux(*args: str) -> str:
    return subprocess.run([*TMUX, *args], check=True, capture_output=True, text=True).stdout


def capture(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def pane_pid(session: str) -> int:
    return int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())


def cpu_seconds(pid: int) -> float:
    """User + system time of the process and of its children it has waited for (ours: the start's reader)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_for(session: str, ready: str, timeout: float) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if ready in capture(session):
            return time.perf_counter()
        time.sleep(0.005)
    raise TimeoutError(f"{session}: `{ready}` did not appear in {timeout}s:\n{capture(session)}")


def key_latencies(session: str, key: str, n: int, timeout: float = 5.0) -> list[float]:
    out = []
    for _ in range(n):
        before = capture(session)
        t0 = time.perf_counter()
        tmux("send-keys", "-t", session, key)
        while True:
            if capture(session) != before:
                out.append(time.perf_counter() - t0)
                break
            if time.perf_counter() - t0 > timeout:
                out.append(timeout)
                break
            time.sleep(0.002)
        time.sleep(0.05)
    return out


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]


def wait_regex(session: str, pattern: str, timeout: float) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if re.search(pattern, capture(session)):
            return time.perf_counter()
        time.sleep(0.005)
    raise TimeoutError(f"{session}: /{pattern}/ did not appear in {timeout}s")


def measure(
    name: str, command: str, ready: str, listed: str, all_listed: str, settled: str | None,
    events_keys: list[str], args: argparse.Namespace,
) -> dict[str, float]:  # fmt: skip
    session = f"tuibench-{name}-{os.getpid()}"
    for attempt in range(5):  # a tmux server that is just exiting (last session killed) refuses for a moment
        try:
            t0 = time.perf_counter()
            tmux("new-session", "-d", "-s", session, "-x", str(SIZE[0]), "-y", str(SIZE[1]), "-c", NEUTRAL_DIR,
                 f"exec {command}")  # fmt: skip
            break
        except subprocess.CalledProcessError:
            if attempt == 4:
                raise
            time.sleep(0.5)
    try:
        pid = pane_pid(session)
        first = wait_for(session, ready, 60) - t0
        runs_listed = wait_regex(session, listed, 60) - t0
        listed_cpu = cpu_seconds(pid)
        runs_all = wait_regex(session, all_listed, 120) - t0
        status = wait_regex(session, STATUS_DRAWN, 120) - t0
        settle = (wait_for(session, settled, 120) - t0) if settled else first
        settle_cpu = cpu_seconds(pid)  # ours: with the chain check's process, reaped by then
        time.sleep(2)  # start-up work done (ours: runs, peaks, integrity check); now idle
        c0 = cpu_seconds(pid)
        time.sleep(args.idle)
        idle = (cpu_seconds(pid) - c0) / max(args.idle, 1e-9) * 100
        runs = key_latencies(session, "j", args.keys) or [float("nan")]
        for k in events_keys:
            tmux("send-keys", "-t", session, k)
            time.sleep(0.3)
        evs = key_latencies(session, "k", args.keys) or [float("nan")]
        rss = peak_rss_mb(pid)
        both = runs + evs
        return {
            "first_frame_s": first,
            "runs_listed_s": runs_listed,
            "runs_all_listed_s": runs_all,
            "runs_status_drawn_s": status,
            "runs_listed_cpu_s": listed_cpu,
            "startup_done_s": settle,
            "startup_done_cpu_s": settle_cpu,
            "idle_cpu_pct": idle,
            "runs_key_p95_ms": p95(runs) * 1000,
            "events_key_p95_ms": p95(evs) * 1000,
            "key_p50_ms": statistics.median(both) * 1000,
            "key_p95_ms": p95(both) * 1000,
            "peak_rss_mb": rss,
        }
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", session], capture_output=True)


# the runs list counted in full (`Runs (N)`) with a run's status drawn: a `✓ main` row (both programs)
STATUS_DRAWN = r"(?s)Runs \(\d+\).*✓ main"

FLOOR_APP = (
    "from textual.app import App\nfrom textual.widgets import Static\n"
    "class Floor(App[None]):\n    def compose(self):\n        yield Static('FLOOR-PAINTED')\nFloor().run()\n"
)


def floor_launch() -> dict[str, float]:
    """An empty Textual app: launch until its one line is on screen, and the CPU seconds used by then."""
    session = f"tuibench-floor-{os.getpid()}"
    script = Path(tempfile.mkdtemp(prefix="bench_tui_floor_")) / "floor.py"
    script.write_text(FLOOR_APP)
    try:
        t0 = time.perf_counter()
        cmd = f"exec env TERM=xterm-256color {sys.executable} {script}"
        tmux("new-session", "-d", "-s", session, "-x", str(SIZE[0]), "-y", str(SIZE[1]), "-c", NEUTRAL_DIR, cmd)
        pid = pane_pid(session)
        painted = wait_for(session, "FLOOR-PAINTED", 60) - t0
        return {"first_frame_s": painted, "runs_listed_s": painted, "runs_listed_cpu_s": cpu_seconds(pid)}
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", session], capture_output=True)
        shutil.rmtree(script.parent, ignore_errors=True)


def bare_walk(db: Path) -> tuple[float, float]:
    """The bare sqlite3+hashlib walk of every chain (no check kept): wall and CPU seconds."""
    from bench_cli import BARE_HASH  # (this script's folder is first on sys.path)

    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", BARE_HASH, str(db)], stdout=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=99_000)
    ap.add_argument("--from", dest="src", default="memory", help="oracle scenario to clone (memory: many small runs)")
    ap.add_argument("--idle", type=float, default=10.0)
    ap.add_argument("--keys", type=int, default=30)
    ap.add_argument("--no-zymi", action="store_true", help="skip measuring zymi observe")
    ap.add_argument("--project", help="reuse a folder holding .zymi/events.db instead of generating a store")
    ap.add_argument("--repeat", type=int, default=3, help="launches of each program, alternated")
    ap.add_argument("--floor", action="store_true", help="also launch an empty Textual app (the start-up floor)")
    ap.add_argument("--checkout", help="also launch the zymi_tui package of this folder (a 'before' figure)")
    ap.add_argument("--socket", help="run the panes on this tmux server (tmux -L NAME), not the default one")
    ap.add_argument("--chain-floor", action="store_true",
                    help="also run the bare sqlite3+hashlib walk of the chains (bench_cli's BARE_HASH), alternated: "
                    "the floor of the time to `verified`")  # fmt: skip
    args = ap.parse_args()
    if args.socket:
        TMUX[:] = ["tmux", "-L", args.socket]
    if not shutil.which("tmux"):
        print("bench_tui: tmux is needed", file=sys.stderr)
        return 2
    work = Path(args.project) if args.project else Path(tempfile.mkdtemp(prefix="bench_tui_"))
    try:
        db = work / ".zymi" / "events.db"
        if not args.project:
            (work / ".zymi").mkdir()
            t = time.perf_counter()
            subprocess.run([sys.executable, str(MAKE_STORE), str(db), "--events", str(args.events), "--from",
                            args.src], check=True, capture_output=True)  # fmt: skip
            print(f"store: {args.events} events cloned from {args.src} in {time.perf_counter() - t:.1f}s")
        else:
            print(f"store: {db}")
        runs: dict[str, list[dict[str, float]]] = {
            "zymi-tui": [],
            "checkout": [],
            "empty Textual": [],
            "zymi observe": [],
        }
        ours = f"env TERM=xterm-256color {VENV / 'zymi-tui'} observe {work} --theme textual-dark"
        packages = [ROOT / "zymi_tui"]
        if args.checkout:
            before = Path(args.checkout).resolve()
            packages.append(before / "zymi_tui")
            old = f"env TERM=xterm-256color PYTHONPATH={before} {sys.executable} -m zymi_tui observe {work}"
            old += " --theme textual-dark"
        for package in packages:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True, capture_output=True)
        zymi = VENV / "zymi"
        bare: list[tuple[float, float]] = []
        for _ in range(args.repeat):
            first_page, every_run = r"Runs \((newest )?\d+", r"Runs \(\d+\)"
            runs["zymi-tui"].append(measure("ours", ours, "· live", first_page, every_run, "verified", ["tab"], args))
            if args.checkout:
                runs["checkout"].append(measure("old", old, "· live", first_page, every_run, "verified", ["tab"], args))
            if args.floor:
                runs["empty Textual"].append(floor_launch())
            if args.chain_floor:
                bare.append(bare_walk(db))
            if not args.no_zymi and zymi.exists():
                cmd = f"env TERM=xterm-256color {zymi} observe -d {work} --no-venv"
                theirs = measure("zymi", cmd, "Runs (", every_run, every_run, None, ["tab", "tab"], args)
                runs["zymi observe"].append(theirs)
        runs = {name: r for name, r in runs.items() if r}
        results = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
        # the ratios to zymi observe, per program, of the first screenful of runs (the floor: its first frame)
        ratios = {name: results[name]["runs_listed_s"] / results["zymi observe"]["runs_listed_s"]
                  for name in results if name != "zymi observe" and "zymi observe" in results}  # fmt: skip
        print(f"{'median (min) of ' + str(args.repeat):24}" + "".join(f"{name:>22}" for name in results)
              + ("   zymi/ours" if "zymi observe" in results else ""))  # fmt: skip
        for k in results["zymi-tui"]:
            row = f"{k:24}" + "".join(
                f"{results[name][k]:13.2f} ({min(r[k] for r in rs):6.2f})" if k in rs[0] else f"{'-':>22}"
                for name, rs in runs.items()
            )
            if "zymi observe" in results:
                ours_v, zymi_v = results["zymi-tui"][k], results["zymi observe"][k]
                row += f"{zymi_v / ours_v:11.2f}x" if ours_v else "          -"
            print(row)
        for name, ratio in ratios.items():
            print(f"runs listed, {name} / zymi observe: {ratio:.2f}x zymi's time (aim for zymi-tui: <= 0.5x)")
        if "zymi observe" in results:
            for name in (n for n in results if n != "zymi observe" and "runs_status_drawn_s" in results[n]):
                drawn = results[name]["runs_status_drawn_s"] / results["zymi observe"]["runs_status_drawn_s"]
                print(f"runs with status (`Runs (N)` and `✓ main`), {name} / zymi observe: {drawn:.2f}x (aim <= 0.5x)")
        if bare:
            wall, cpu = statistics.median(w for w, _ in bare), statistics.median(c for _, c in bare)
            print(f"bare chain walk (BARE_HASH): {wall:.2f} s wall, {cpu:.2f} s CPU (median of {len(bare)})")
            for name in (n for n in results if n != "zymi observe" and "startup_done_s" in results[n]):
                done = results[name]["startup_done_s"]
                print(f"`verified`, {name}: {done:.2f} s = {done / wall:.2f}x the bare walk's wall time")
        aims = {"first_frame_s": 0.5, "idle_cpu_pct": 3.0, "key_p95_ms": 50.0, "peak_rss_mb": 300.0}
        misses = [f"{k} {results['zymi-tui'][k]:.2f} > {v}" for k, v in aims.items() if results["zymi-tui"][k] > v]
        print("aims met" if not misses else "aims missed: " + "; ".join(misses))
    finally:
        if not args.project:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
