#!/usr/bin/env python3
"""Write zymi_tui/data/regex_cache.marshal: the regular expressions a `zymi-tui run` compiles, in their
compiled form, for the Python running this script (zymi_tui/regex_cache.py reads it).

    .venv/bin/python scripts/regex_cache.py

A `run` of the demo project (`zymi-tui init`, then `run main`, which runs a shell command and reads
files) and `zymi-tui --help` are run in a process that records every pattern `re`'s compiler is asked
for; each is compiled again here and stored. Run it again after a Python or dependency upgrade (a file
made by another Python is ignored: the patterns then compile as usual).
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from zymi_tui.regex_cache import compiled_form, data_path, python_key  # noqa: E402

RECORD = """
import json, os, re, sys
seen = []
compile = re._compiler.compile
def recording(p, flags=0):
    if isinstance(p, (str, bytes)):
        seen.append((type(p).__name__, p.decode('latin-1') if isinstance(p, bytes) else p, int(flags)))
    return compile(p, flags)
re._compiler.compile = recording
re._cache.clear()
import zymi_tui
re._cache.clear()  # what the package seeded is recorded too
from zymi_tui.cli import main
try:
    code = main(sys.argv[1:])
finally:
    with open(os.environ["RECORD_TO"], "a") as f:
        f.write(json.dumps(seen) + "\\n")
"""


def main() -> int:
    patterns: dict[tuple[type, str | bytes, int], None] = {}
    with tempfile.TemporaryDirectory(prefix="regex_cache_") as tmp:
        record = Path(tmp) / "record.jsonl"
        env = {**os.environ, "RECORD_TO": str(record), "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-m", "zymi_tui", "init"], cwd=tmp, env=env, check=True, capture_output=True)
        for args in (["--help"], ["run", "main", "-i", "task=list the files, then read README.md"]):
            subprocess.run([sys.executable, "-c", RECORD, *args], cwd=tmp, env=env, check=True, capture_output=True)
        for line in record.read_text(encoding="utf-8").splitlines():
            for kind, text, flags in json.loads(line):
                pattern: str | bytes = text.encode("latin-1") if kind == "bytes" else text
                patterns[(type(pattern), pattern, flags)] = None
    stored = {"python": python_key(), "patterns": [compiled_form(p, flags) for _, p, flags in patterns]}
    path = Path(data_path())
    path.write_bytes(marshal.dumps(stored))
    print(f"wrote {path}: {len(patterns)} patterns, {path.stat().st_size} bytes, for Python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
