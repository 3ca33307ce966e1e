"""One long run in the dashboard, against `zymi observe`, in tmux, as a person sees it.

    .venv/bin/python benchmarks/bench_long_run.py [--events 100000] [--repeat 3]
    .venv/bin/python benchmarks/bench_long_run.py --project /tmp/p100k   # a folder holding .zymi/events.db
    .venv/bin/python benchmarks/bench_long_run.py --project /tmp/p100k --checkout /tmp/before  # another tree

The store holds ONE run (benchmarks/make_long_run.py: a recording cloned as turns of one stream); the
dashboard selects it when its runs are listed. Both programs run in a detached 120x40 tmux pane,
alternated (ours, zymi, ours, ...) so both see the same machine load; each figure is the median (min) of
--repeat launches, whole process, from the screen as painted:
- runs listed: launch until the runs list is drawn (the run is selected then);
- events drawn: launch until the events list shows the whole run (ours: its title counts every event
  of the run, not `loading…`; zymi: `Events (N)`); first events: until any of its events are drawn;
- plot drawn (ours): until the context plot's title names the run's last LLM call;
- key -> events drawn (ours): then `j` selects the run's first turn and, once it is drawn, `k` the whole
  run again: from `k` until the whole run is drawn (first events: until its newest page is; kinds read:
  until the title no longer says `reading kinds…`, when the kind filters and pickers have their answer);
  zymi observe lists one entry for the run (no turns): its figure to compare is its launch -> events drawn;
- peak RSS (VmHWM) at the end (zymi: once its events are drawn, plus the same settle time).
`--checkout DIR` runs the zymi_tui package of DIR (`python -m zymi_tui` from DIR) as "ours": a before figure.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tui import SIZE, VENV, capture, pane_pid, peak_rss_mb, tmux

ROOT = Path(__file__).resolve().parents[1]
SETTLE_S = 1.0


def wait_regex(session: str, pattern: str, timeout: float) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if re.search(pattern, capture(session)):
            return time.perf_counter()
        time.sleep(0.005)
    raise TimeoutError(f"{session}: /{pattern}/ did not appear in {timeout}s:\n{capture(session)}")


def launch(session: str, command: str, cwd: Path | None) -> float:
    for attempt in range(5):  # a tmux server that is just exiting refuses for a moment
        try:
            t0 = time.perf_counter()
            where = ["-c", str(cwd)] if cwd else []
            tmux("new-session", "-d", "-s", session, "-x", str(SIZE[0]), "-y", str(SIZE[1]), *where, f"exec {command}")
            return t0
        except subprocess.CalledProcessError:
            if attempt == 4:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def measure_ours(command: str, cwd: Path | None, events: int, calls: int, timeout: float) -> dict[str, float]:
    session = f"longrun-ours-{time.monotonic_ns()}"
    t0 = launch(session, command, cwd)
    whole_run = rf"Events · {events}/{events} events(?! · loading)"
    with_kinds = rf"Events · {events}/{events} events(?! · loading| · reading kinds)"
    try:
        pid = pane_pid(session)
        runs = wait_regex(session, r"Runs \(", timeout) - t0
        first = wait_regex(session, r"Events · \d+/\d+ events", timeout) - t0
        whole = wait_regex(session, whole_run, timeout) - t0
        plot = wait_regex(session, rf"Context · last #{calls}\b", timeout) - t0
        # by key: j selects the run's first turn (drawn whole), k the whole run again
        tmux("send-keys", "-t", session, "j")
        wait_regex(session, rf"Events · (?!{events}/)(\d+)/\1 events(?! · loading)", timeout)
        time.sleep(SETTLE_S)
        t_key = time.perf_counter()
        tmux("send-keys", "-t", session, "k")
        key_first = wait_regex(session, rf"Events · \d+/\d+ events · loading|{whole_run}", timeout) - t_key
        key_whole = wait_regex(session, whole_run, timeout) - t_key
        key_kinds = wait_regex(session, with_kinds, timeout) - t_key
        time.sleep(SETTLE_S)
        return {"runs_listed_s": runs, "first_events_s": first, "events_drawn_s": whole, "plot_drawn_s": plot,
                "key_to_first_events_s": key_first, "key_to_events_drawn_s": key_whole,
                "key_to_kinds_read_s": key_kinds, "peak_rss_mb": peak_rss_mb(pid)}  # fmt: skip
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def measure_zymi(command: str, timeout: float) -> dict[str, float]:
    session = f"longrun-zymi-{time.monotonic_ns()}"
    t0 = launch(session, command, None)
    try:
        pid = pane_pid(session)
        runs = wait_regex(session, r"Runs \(", timeout) - t0
        whole = wait_regex(session, r"Events \(\d+\)", timeout) - t0
        time.sleep(SETTLE_S)
        return {"runs_listed_s": runs, "first_events_s": whole, "events_drawn_s": whole,
                "peak_rss_mb": peak_rss_mb(pid)}  # fmt: skip
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def run_figures(db: Path) -> tuple[str, int, int]:
    """The run's stream, its events (run stream and step streams) and its agent LLM calls (iteration > 0)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        (stream,) = c.execute("SELECT stream_id FROM events WHERE stream_id NOT LIKE '%:step:%' LIMIT 1").fetchone()
        like = stream.replace("%", r"\%").replace("_", r"\_") + ":step:%"
        mine = "(stream_id = ? OR stream_id LIKE ? ESCAPE '\\')"
        (events,) = c.execute(f"SELECT COUNT(*) FROM events WHERE {mine}", (stream, like)).fetchone()
        (calls,) = c.execute(
            f"SELECT COUNT(*) FROM events WHERE {mine} AND kind_tag = 'llm_call_started' "
            "AND json_extract(data, '$.kind.data.iteration') > 0",
            (stream, like),
        ).fetchone()
    return str(stream), int(events), int(calls)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--project", help="reuse a folder holding .zymi/events.db (one long run) instead of making one")
    ap.add_argument("--checkout", help="run the zymi_tui package of this folder as ours (a 'before' figure)")
    ap.add_argument("--repeat", type=int, default=3, help="launches of each program, alternated")
    ap.add_argument("--no-zymi", action="store_true", help="skip measuring zymi observe")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    if not shutil.which("tmux"):
        print("bench_long_run: tmux is needed", file=sys.stderr)
        return 2
    work = Path(args.project) if args.project else Path(tempfile.mkdtemp(prefix="bench_long_run_"))
    try:
        db = work / ".zymi" / "events.db"
        if not args.project:
            (work / ".zymi").mkdir()
            make = ROOT / "benchmarks" / "make_long_run.py"
            subprocess.run([sys.executable, str(make), str(db), "--events", str(args.events)], check=True)
        stream, events, calls = run_figures(db)
        print(f"store: {db}: run {stream}, {events} events, {calls} agent LLM calls")
        cwd = Path(args.checkout).resolve() if args.checkout else None
        ours = f"env TERM=xterm-256color {VENV / 'python'} -m zymi_tui observe {work} --theme textual-dark"
        zymi = VENV / "zymi"
        results: dict[str, list[dict[str, float]]] = {"zymi-tui": [], "zymi observe": []}
        for _ in range(args.repeat):
            results["zymi-tui"].append(measure_ours(ours, cwd, events, calls, args.timeout))
            if not args.no_zymi and zymi.exists():
                cmd = f"env TERM=xterm-256color {zymi} observe -d {work} --no-venv"
                results["zymi observe"].append(measure_zymi(cmd, args.timeout))
        results = {name: rs for name, rs in results.items() if rs}
        print(f"{'median (min) of ' + str(args.repeat):24}" + "".join(f"{name:>22}" for name in results)
              + ("   zymi/ours" if len(results) > 1 else ""))  # fmt: skip
        for k in results["zymi-tui"][0]:
            row = f"{k:24}"
            for rs in results.values():
                vals = [r[k] for r in rs if k in r]
                row += f"{statistics.median(vals):13.2f} ({min(vals):6.2f})" if vals else f"{'-':>22}"
            if len(results) > 1 and k in results["zymi observe"][0]:
                ours_v = statistics.median(r[k] for r in results["zymi-tui"])
                theirs = statistics.median(r[k] for r in results["zymi observe"])
                row += f"{theirs / ours_v:11.2f}x" if ours_v > 0 else "          -"
            print(row)
        mine = {k: statistics.median(r[k] for r in results["zymi-tui"]) for k in results["zymi-tui"][0]}
        aims = {"key_to_events_drawn_s": 0.5, "peak_rss_mb": 300.0}
        misses = [f"{k} {mine[k]:.2f} > {v}" for k, v in aims.items() if mine[k] > v]
        print("aims met" if not misses else "aims missed: " + "; ".join(misses))
    finally:
        if not args.project:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
