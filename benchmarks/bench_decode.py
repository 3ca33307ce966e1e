"""CPU time to read every row of a store as a whole event and as a search line, against a bare scan in
the same run (and against another checkout's package: a 'before' figure).

    .venv/bin/python benchmarks/bench_decode.py --store /tmp/coding_100k.db [--checkout /tmp/main] [--repeat 3]

Each reader runs in its own process, alternated with the others, --repeat times: `decode_event` (what
`events`, the dashboard and a store's whole reads make of a row), `row_line` (a search's line of a row)
and the bare scan (`json.loads` of each row, which no reader can skip). The rows are fetched before the
clock starts; printed: the least CPU seconds of each and its ratio to the bare scan (and to --checkout).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

READ = """
import sqlite3, sys, time
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = con.execute("SELECT sequence, data FROM events ORDER BY id").fetchall()
if sys.argv[2] == "bare":
    import json
    read = lambda data, seq: json.loads(data)
elif sys.argv[2] == "decode_event":
    from zymi_tui.events.envelope import decode_event as read
else:
    from zymi_tui.events.row_describe import row_line as read
read(rows[0][1], rows[0][0])
t = time.process_time()
for seq, data in rows:
    read(data, seq)
print(time.process_time() - t)
"""


def cpu_seconds(store: str, reader: str, package: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(package)}
    # run in the package's folder: `-c` puts the current folder first on sys.path
    args = [sys.executable, "-c", READ, str(Path(store).resolve()), reader]
    done = subprocess.run(args, env=env, cwd=package, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_decode: {reader} under {package} failed: {done.stderr.strip()[-400:]}")
    return float(done.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="a zymi SQLite store (read only)")
    ap.add_argument("--checkout", help="also time the zymi_tui package of this folder (a 'before' figure)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    packages = {"ours": ROOT} | ({"checkout": Path(a.checkout).resolve()} if a.checkout else {})
    cases = [("bare", "bare", ROOT)] + [(f"{r} ({n})", r, p) for r in ("decode_event", "row_line")
                                        for n, p in packages.items()]  # fmt: skip
    best: dict[str, float] = {}
    for _ in range(a.repeat):  # alternated: every case sees the same machine load
        for name, reader, package in cases:
            best[name] = min(best.get(name, float("inf")), cpu_seconds(a.store, reader, package))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for name, _, _ in cases:
        line = f"{name:26} CPU {best[name]:7.3f} s  {best[name] / best['bare']:5.2f}x the bare scan"
        if name.endswith("(ours)") and a.checkout:
            before = best[name.replace("(ours)", "(checkout)")]
            line += f"  {best[name] / before:5.2f}x the checkout"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
