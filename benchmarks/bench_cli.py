"""Whole-process timings of the CLI, as a person at a shell sees them, against a baseline in the same run.

    .venv/bin/python benchmarks/bench_cli.py --many /tmp/many_99k.db --coding /tmp/coding_100k.db [--repeat 5]
    .venv/bin/python benchmarks/bench_cli.py --only replay --coding /tmp/coding_1m.db --repeat 1
    .venv/bin/python benchmarks/bench_cli.py --grid --many /tmp/many_99k.db --many /tmp/many_1m.db \
        --long /tmp/long_100k.db --long /tmp/long_1m.db --repeat 3 [--only "replay,events"]

`--grid` times every subcommand that reads a whole store (`replay` table and JSON, `context`, `compare`,
`sweep`, `rent`, `find`, `advise`, `export` otel and lhar, `verify`, `runs`, `events --all --raw`) on
each store given (`--many` and `--long` are repeatable: give a 100k and a 1M store of each shape),
against the bare scan and against `zymi` where it has the command, then prints, per command and shape,
the peak RSS of the largest store over that of the smallest (flat memory: at most 1.3x). `--only`
takes comma-separated parts of case names (`--only "replay table,export"`): the full grid at 1M is long.

Each case runs our command and its baseline alternately (ours, baseline, ours, ...), --repeat times,
as separate processes (start-up, imports and output included; output goes to /dev/null). Printed:
median (min) wall seconds of each, peak RSS, and ours / baseline against the aim; then the median CPU
seconds (user + system) and their ratio, which a loaded machine disturbs less than wall time. The baselines:
`zymi` itself (installed by the test extra) or a bare scan of the same rows in plain Python
(`sqlite3` + `json.loads`, or `sqlite3` + `hashlib`), which no reader can skip.
Stores: shared/tools/make_big_store.py (many small runs: `--from memory`; long runs:
`--from coding_default`) and benchmarks/make_long_run.py (one long run). Keep them in /tmp.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
OURS = [str(BIN / "zymi-tui")]
ZYMI = str(BIN / "zymi")
PY = sys.executable
SMALL = ROOT / "tests" / "oracle" / "chat_profile"

BARE_SCAN = (
    "import sqlite3, json, sys\n"
    "c = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True)\n"
    "for gid, s, q, d in c.execute('SELECT id, stream_id, sequence, data FROM events ORDER BY id'):\n"
    "    json.loads(d)\n"
)
BARE_HASH = (
    "import sqlite3, hashlib, sys\n"
    "c = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True)\n"
    "for eid, seq, data, prev in c.execute('SELECT event_id, sequence, data, prev_hash FROM events ORDER BY id'):\n"
    "    h = hashlib.sha256(b'v2'); h.update(eid.encode()); h.update(seq.to_bytes(8, 'little'))\n"
    "    h.update(data.encode()); h.update(prev.encode()); h.hexdigest()\n"
)


@dataclass
class Case:
    name: str
    ours: list[str]
    baseline: list[str]
    baseline_name: str
    aim: float  # ours / baseline at most (a ratio), or seconds when `aim_seconds`; 99: no aim (info)
    aim_seconds: bool = False
    rss_aim: float = 0  # MB at most (0: none)
    group: str = ""  # command and store shape, for the flat-memory line (grid cases)


def run(cmd: list[str], cwd: str | None = None) -> tuple[float, float, int, float]:
    """Wall seconds, peak RSS (MB), exit status and CPU seconds (user + system) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode, usage.ru_utime + usage.ru_stime


def zymi_project(db: Path, work: Path) -> Path:
    """zymi reads DIR/.zymi/events.db (and writes its schema there): a folder of its own, linking the store."""
    folder = work / db.stem
    (folder / ".zymi").mkdir(parents=True, exist_ok=True)
    link = folder / ".zymi" / "events.db"
    if not link.exists():
        link.symlink_to(db.resolve())
    return folder


def cases(a: argparse.Namespace, work: Path) -> list[Case]:
    small = work / "small"
    if not small.exists():
        (small / ".zymi").mkdir(parents=True)
        shutil.copy(SMALL / "events.db", small / ".zymi" / "events.db")
    out = [
        Case("--version", [*OURS, "--version"], [ZYMI, "--version"], "zymi --version", 0.15, aim_seconds=True),
        Case("--version vs python", [*OURS, "--version"], [PY, "-c", "pass"], "python -c pass", 0.15, True),
        Case(
            "runs (small store)", [*OURS, "runs", str(small)], [ZYMI, "runs", "-d", str(small)], "zymi runs", 0.3, True
        ),
    ]
    if a.many and not a.grid:
        many = Path(a.many[0])
        out += [
            Case(f"events --all --raw ({many.name})", [*OURS, "events", str(many), "--all", "--raw"],
                 [PY, "-c", BARE_SCAN, str(many)], "bare sqlite3+json", 2.5),
            Case(f"events --all --raw ({many.name}) vs zymi", [*OURS, "events", str(many), "--all", "--raw"],
                 [ZYMI, "events", "-d", str(zymi_project(many, work)), "--raw", "-l", "100000000"], "zymi events", 99),
            Case(f"runs ({many.name})", [*OURS, "runs", str(many)],
                 [ZYMI, "runs", "-d", str(zymi_project(many, work)), "-l", "100000000"], "zymi runs", 99),
            Case(f"verify ({many.name})", [*OURS, "verify", str(many)], [PY, "-c", BARE_HASH, str(many)],
                 "bare sqlite3+hashlib", 2.0),
        ]  # fmt: skip
    if a.coding:
        coding = Path(a.coding)
        out += [
            Case(f"replay --json ({coding.name})", [*OURS, "replay", str(coding), "--json"],
                 [PY, "-c", BARE_SCAN, str(coding)], "bare sqlite3+json", 3.0),
        ]  # fmt: skip
    for kind, paths in (("many", a.many if a.grid else []), ("long", a.long)):
        for path in paths:
            out += grid_cases(Path(path), kind, work)
    wanted = [w.strip() for w in a.only.split(",")] if a.only else []
    return [c for c in out if not wanted or any(w in c.name for w in wanted)]


def _busiest_step(db: Path) -> tuple[str, int]:
    """The step stream with the most events and the sequence of its last LLM call (for context, rent, find)."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (stream,) = c.execute(
            "SELECT stream_id FROM events WHERE stream_id LIKE '%:step:%' GROUP BY stream_id ORDER BY count(*) DESC "
            "LIMIT 1"
        ).fetchone()
        (seq,) = c.execute(
            "SELECT max(sequence) FROM events WHERE stream_id = ? AND kind_tag = 'llm_call_started'", (stream,)
        ).fetchone()
    finally:
        c.close()
    return stream, seq


def grid_cases(db: Path, shape: str, work: Path) -> list[Case]:
    """Every subcommand that reads a whole store, on `db`, against the bare scan (and zymi where it has it)."""
    tag = f"[{db.stem}]"
    step, seq = _busiest_step(db)
    scan, hashed, zdir = [PY, "-c", BARE_SCAN, str(db)], [PY, "-c", BARE_HASH, str(db)], str(zymi_project(db, work))
    bare, bare_hash = "bare sqlite3+json", "bare sqlite3+hashlib"
    store = str(db)
    spec: list[tuple[str, list[str], list[str], str, float, float]] = [
        ("replay table", ["replay", store], scan, bare, 3.0, 0),
        ("replay --json", ["replay", store, "--json"], scan, bare, 2.5, 0),
        ("context", ["context", store, "--step-stream", step, "--seq", str(seq)], scan, bare, 99, 0),
        ("compare", ["compare", store, "--profiles", "chat,coding"], scan, bare, 99, 0),
        ("sweep", ["sweep", store, "--window", "2,4", "--soft-cap", "40k,100k"], scan, bare, 99, 0),
        ("rent", ["rent", store, "--step-stream", step], scan, bare, 99, 0),
        ("find", ["find", "zz-not-in-any-context", store, "--step-stream", step], scan, bare, 99, 0),
        ("advise", ["advise", store], scan, bare, 6.0, 0),
        ("export otel", ["export", store, "--format", "otel"], scan, bare, 3.0, 200),
        # a folder: stdout takes one session, a store of many runs has one per run (one file each)
        ("export lhar", ["export", store, "--format", "lhar", "-o", f"{work}/lhar_{db.stem}/"], scan, bare, 3.0, 200),
        ("verify", ["verify", store], hashed, bare_hash, 2.0, 0),
        ("verify vs zymi", ["verify", store], [ZYMI, "verify", "-d", zdir], "zymi verify", 99, 0),
        ("runs", ["runs", store], scan, bare, 99, 0),
        ("runs vs zymi", ["runs", store], [ZYMI, "runs", "-d", zdir, "-l", "100000000"], "zymi runs", 99, 0),
        ("events --all --raw", ["events", store, "--all", "--raw"], scan, bare, 2.5, 0),
        ("events --all --raw vs zymi", ["events", store, "--all", "--raw"],
         [ZYMI, "events", "-d", zdir, "--raw", "-l", "100000000"], "zymi events", 1.0, 0),
    ]  # fmt: skip
    return [
        Case(f"{name} {tag}", [*OURS, *argv], base, base_name, aim, rss_aim=rss, group=f"{name} ({shape})")
        for name, argv, base, base_name, aim, rss in spec
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument(
        "--many",
        action="append",
        default=[],
        help="a store of many small runs (make_big_store.py --from memory); repeatable with --grid",
    )
    ap.add_argument("--grid", action="store_true", help="every whole-store subcommand on each --many/--long store")
    ap.add_argument("--long", action="append", default=[], help="(--grid) a one-long-run store (make_long_run.py)")
    ap.add_argument("--coding", help="a store of long agent runs (make_big_store.py --from coding_default)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", help="run the cases whose name contains one of these (comma-separated)")
    ap.add_argument("--checkout", help="time the zymi_tui package of this folder instead (a 'before' figure)")
    a = ap.parse_args()
    cwd = None
    if a.checkout:  # `python -m` puts the current folder first on sys.path: that checkout's package is run
        OURS[:] = [PY, "-m", "zymi_tui"]
        cwd = str(Path(a.checkout).resolve())
    if not Path(ZYMI).exists():
        print("bench_cli: zymi is not installed in .venv (pip install -e '.[test]')", file=sys.stderr)
        return 2
    # an installed wheel has its bytecode; an editable checkout run with PYTHONDONTWRITEBYTECODE=1 (as on the
    # shared machine) would compile every module at every start (0.4 s): written once here, as pip would
    package = Path(cwd or ROOT) / "zymi_tui"
    subprocess.run([PY, "-m", "compileall", "-q", str(package)], check=False, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="bench_cli_") as tmp:
        work = Path(tmp)
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        print(f"{'case':44} {'ours s: median (min)':>22} {'baseline s':>18}  {'RSS MB':>14}  ours/base  aim")
        peaks: dict[str, list[tuple[str, float]]] = {}
        for case in cases(a, work):
            ours: list[tuple[float, float, int, float]] = []
            base: list[tuple[float, float, int, float]] = []
            for _ in range(a.repeat):  # alternated, so both see the same machine load and page cache
                ours.append(run(case.ours, cwd))
                base.append(run(case.baseline))
            failed = [c for _, _, c, _ in ours if c != 0]
            o = statistics.median(w for w, _, _, _ in ours)
            b = statistics.median(w for w, _, _, _ in base)
            ratio = o / b
            met = o <= case.aim if case.aim_seconds else ratio <= case.aim
            aim = f"<= {case.aim} s" if case.aim_seconds else f"<= {case.aim}x" if case.aim < 99 else "(info)"
            o_min, b_min = min(w for w, *_ in ours), min(w for w, *_ in base)
            print(
                f"{case.name:44} {o:10.3f} ({o_min:6.3f}) {b:8.3f} ({b_min:6.3f})"
                f"  {max(r for _, r, *_ in ours):5.0f} / {max(r for _, r, *_ in base):5.0f}  {ratio:8.2f}x  {aim}"
                + ("" if case.aim >= 99 else " met" if met else " MISSED")
                + (f"  (ours exited {failed[0]})" if failed else "")
                + f"  [{case.baseline_name}]"
            )
            cpu_o, cpu_b = statistics.median(c for *_, c in ours), statistics.median(c for *_, c in base)
            rss = max(r for _, r, *_ in ours)
            rss_aim = f"  peak RSS {rss:.0f} MB <= {case.rss_aim:.0f} MB " + (
                "met" if rss <= case.rss_aim else "MISSED"
            )
            print(
                f"{'':44} CPU s {cpu_o:8.3f} {cpu_b:17.3f}  {'':14}  {cpu_o / max(cpu_b, 1e-9):8.2f}x (CPU time)"
                f"  load {os.getloadavg()[0]:.1f}" + (rss_aim if case.rss_aim else "")
            )
            if case.group:
                peaks.setdefault(case.group, []).append((case.name, rss))
            sys.stdout.flush()
        flat_memory(peaks)
    return 0


def flat_memory(peaks: dict[str, list[tuple[str, float]]]) -> None:
    """Per command and store shape: the peak RSS on the largest store over that on the smallest (the
    stores are given smallest first)."""
    lines = [(group, runs[0], runs[-1]) for group, runs in peaks.items() if len(runs) > 1]
    if lines:
        print("\nflat memory: peak RSS of the last store given over the first, aim <= 1.3x")
    for group, (small, rss_small), (big, rss_big) in lines:
        ratio = rss_big / max(rss_small, 1e-9)
        print(
            f"  {group:34} {rss_small:6.0f} MB -> {rss_big:6.0f} MB  {ratio:5.2f}x  "
            + ("met" if ratio <= 1.3 else "MISSED")
            + f"  ({small.split('[')[-1][:-1]} -> {big.split('[')[-1][:-1]})"
        )


if __name__ == "__main__":
    sys.exit(main())
