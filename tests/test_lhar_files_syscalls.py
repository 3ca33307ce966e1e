"""What writing a session's `.lhar` file costs the system, counted by `strace` around a real export: a
session's file is opened, written a buffer at a time and closed (no `fstat` or `lseek` of a buffered
file object), and every file still holds its session's lines; and sessions interleaved past `OPEN_FILES`,
each closed and opened again, keep their lines whole and in order."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cloned_runs
from zymi_tui.telemetry import lhar_files
from zymi_tui.telemetry.lhar_entry import LharEntry
from zymi_tui.telemetry.lhar_files import LharFiles, LharTarget

CALL = re.compile(r"^(?:\d+ +)?(\w+)\((\d+)?")  # `strace -f` lines: [pid] name(first argument
OPENED = re.compile(r'^(?:\d+ +)?openat\(AT_FDCWD, "([^"]+\.lhar)".* = (\d+)$')


def _calls_per_file(log: str) -> dict[str, list[str]]:
    """The system calls made on each `.lhar` file's descriptor, from its open to its close, by name."""
    open_fds: dict[str, str] = {}
    calls: dict[str, list[str]] = {}
    for line in log.splitlines():
        opened = OPENED.match(line)
        if opened:
            open_fds[opened.group(2)] = opened.group(1)
            calls.setdefault(opened.group(1), []).append("openat")
            continue
        call = CALL.match(line)
        if call and call.group(2) in open_fds:
            calls[open_fds[call.group(2)]].append(call.group(1))
            if call.group(1) == "close":
                del open_fds[call.group(2)]
    return calls


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_sessions_file_is_opened_written_and_closed(tmp_path: Path) -> None:
    store = cloned_runs(tmp_path, 3)
    out, log = tmp_path / "out", tmp_path / "strace.log"
    proc = subprocess.run(
        ["strace", "-f", "-e", "trace=%desc", "-o", str(log), sys.executable, "-m", "zymi_tui", "export",
         str(store), "--format", "lhar", "-o", f"{out}/"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if not log.exists() or "Operation not permitted" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr[-200:]}")
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.iterdir())
    assert len(files) == 3
    calls = _calls_per_file(log.read_text())
    assert sorted(calls) == [str(f) for f in files]
    for f in files:  # opened, written a buffer (`FILE_BUFFER`) at a time, closed: nothing else
        writes = -(-f.stat().st_size // lhar_files.FILE_BUFFER)
        assert calls[str(f)] in (["openat", *["write"] * n, "close"] for n in (writes, writes + 1))
    for f in files:
        lines = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()]
        assert lines[0]["type"] == "session"
        assert len(lines) > 1
        assert all(line["type"] == "entry" for line in lines[1:])


def test_sessions_interleaved_past_the_open_files_keep_their_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lhar_files, "OPEN_FILES", 3)
    monkeypatch.setattr(lhar_files, "FILE_BUFFER", 200)
    files = LharFiles(LharTarget(tmp_path, True), "m")
    sent: dict[str, list[dict[str, object]]] = {}
    for i in range(400):
        conversation = f"run-{(i * 7) % 9}"
        value = {"type": "entry", "i": i, "text": "é" * (i % 50)}
        sent.setdefault(conversation, []).append(value)
        files.write(LharEntry(conversation, f"t{i}", (json.dumps(value, ensure_ascii=False) + "\n").encode()))
    files.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{c}.lhar" for c in sent)
    for conversation, values in sent.items():
        lines = [json.loads(x) for x in (tmp_path / f"{conversation}.lhar").read_text(encoding="utf-8").splitlines()]
        assert lines[0] == {"type": "session", "trace_id": lines[0]["trace_id"], "started_at": "t" + str(
            values[0]["i"]), "tool": "zymi", "model": "m"}  # fmt: skip
        assert lines[1:] == values
    assert files.entries == 400
