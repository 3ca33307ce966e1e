"""An `export` process ends as soon as its work is done (no interpreter teardown: ~10-30 ms after a long
run's export), with all of its output, its summary line and its exit code, to a file or to stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import oracle_db
from tests.test_engine_run_exit import RUN
from tests.waiting import LIMIT


def zymi_tui(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", RUN, *argv], capture_output=True, timeout=LIMIT, check=False)


def _spans(text: bytes) -> int:
    lines = text.decode().splitlines()
    return sum(len(s["spans"]) for line in lines for r in json.loads(line)["resourceSpans"] for s in r["scopeSpans"])


def test_an_export_ends_at_once_with_its_output_and_code(tmp_path: Path) -> None:
    store = str(oracle_db("coding_default"))
    out = tmp_path / "spans.jsonl"
    to_file = zymi_tui("export", store, "--format", "otel", "-o", str(out))
    assert to_file.returncode == 0, to_file.stderr
    written = _spans(out.read_bytes())
    assert written > 0
    assert to_file.stderr.decode().splitlines() == [f"wrote {written} spans to {out.resolve()}"]

    to_stdout = zymi_tui("export", store, "--format", "otel")
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout == out.read_bytes() and to_stdout.stderr == b""

    failed = zymi_tui("export", str(tmp_path / "none.db"), "--format", "otel")
    assert failed.returncode != 0 and failed.stderr, failed
    assert b"interpreter teardown" not in failed.stderr
