"""What `export` cannot skip, against the bare scan of the same store, in the same run: the floor under
`bench_cli.py --grid --only export`'s ratios.

    .venv/bin/python benchmarks/bench_export_floor.py /tmp/stores/many_99k.db /tmp/stores/long_100k.db [--repeat 3]

Each part is a separate process, timed by its CPU seconds (user + system: a loaded machine disturbs
them less than wall time), median of --repeat, alternating with the bare scan (`bench_cli.BARE_SCAN`):

- start: the interpreter and the export command's imports;
- replay: start + every event replayed, with the calls it completed (`export_calls.walk`): the replay
  each export is made from (zymi_tui/replay, context: not the export's own code);
- +entries: replay + each call's rebuilt message list (`RenderedContext.entries`), which both formats read;
- +tokenizer: +entries + the tokenizer's ranks (LHAR counts each message's tokens);
- otel, lhar: the whole command, as bench_cli.py runs it;
- write otel text: the otel output's lines, already in memory, written to a file (TextIOWrapper, UTF-8);
  bytes: the same lines already in UTF-8, written to a 1 MB-buffered binary file (how the export writes
  now: `otlp_lines` writes each message's UTF-8 text, made once, never the whole span's text encoded);
  and msgspec: the same lines decoded beforehand, encoded by msgspec and written (the least any JSON
  writer in Python pays for that text). Each is timed inside the process, loading excluded.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_cli import BARE_SCAN, BIN, PY

STEPS = """
import asyncio, sys
from pathlib import Path
from zymi_tui.commands import export_cmds
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.telemetry.export_calls import walk

async def main(path: str, part: str) -> None:
    reader = await open_reader(SqliteStore(Path(path)))
    if part == "+tokenizer":
        from zymi_tui.context.tokens import load_encoding
        load_encoding()
    async for _se, rows in walk(reader, None, None):
        if part != "replay":
            for r in rows:
                if r.rendered is not None:
                    r.rendered.entries
    await reader.close()

if sys.argv[2] != "start":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
"""

WRITE = """
import sys, time, msgspec
lines = open(sys.argv[1], encoding="utf-8").read().splitlines(keepends=True)
if sys.argv[2] == "text":
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        t0 = time.process_time()
        for line in lines:
            f.write(line)
        t1 = time.process_time()
elif sys.argv[2] == "bytes":
    encoded = [line.encode() for line in lines]
    del lines
    with open(sys.argv[3], "wb", buffering=1 << 20) as f:
        t0 = time.process_time()
        for b in encoded:
            f.write(b)
        t1 = time.process_time()
else:
    docs = [msgspec.json.decode(line) for line in lines]
    del lines
    with open(sys.argv[3], "wb") as f:
        t0 = time.process_time()
        for d in docs:
            f.write(msgspec.json.encode(d))
            f.write(b"\\n")
        t1 = time.process_time()
print(t1 - t0)
"""


def cpu(cmd: list[str]) -> tuple[float, float, str]:
    """CPU seconds (user + system), peak RSS (MB) and stdout of one process."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)}: {err.strip().splitlines()[-1:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def floor(db: Path, repeat: int, tmp: Path) -> None:
    zymi_tui = str(BIN / "zymi-tui")
    otel_out = tmp / f"{db.stem}.otel.jsonl"
    parts: dict[str, list[str]] = {
        "start": [PY, "-c", STEPS, str(db), "start"],
        "replay": [PY, "-c", STEPS, str(db), "replay"],
        "+entries": [PY, "-c", STEPS, str(db), "+entries"],
        "+tokenizer": [PY, "-c", STEPS, str(db), "+tokenizer"],
        "otel": [zymi_tui, "export", str(db), "--format", "otel", "-o", str(otel_out)],
        "lhar": [zymi_tui, "export", str(db), "--format", "lhar", "-o", f"{tmp}/lhar_{db.stem}/"],
    }
    bare: list[float] = []
    got: dict[str, list[tuple[float, float]]] = {p: [] for p in parts}
    for _ in range(repeat):
        for part, cmd in parts.items():
            bare.append(cpu([PY, "-c", BARE_SCAN, str(db)])[0])
            c, rss, _ = cpu(cmd)
            got[part].append((c, rss))
    base = statistics.median(bare)
    print(f"{db.name}: bare scan {base:.3f} s CPU (median of {len(bare)})")
    for part, runs in got.items():
        c = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        print(f"  {part:11} {c:7.3f} s CPU  {c / base:5.2f}x  peak RSS {rss:5.0f} MB")
    size = otel_out.stat().st_size
    for how in ("text", "bytes", "msgspec"):
        secs = [float(cpu([PY, "-c", WRITE, str(otel_out), how, str(tmp / "w.jsonl")])[2]) for _ in range(repeat)]
        s = statistics.median(secs)
        print(f"  write otel text ({how:7}, {size / 1e6:.0f} MB) {s:6.3f} s CPU  {s / base:5.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stores", nargs="+", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-export-floor-") as tmp:
        for db in a.stores:
            floor(db, a.repeat, Path(tmp))
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
