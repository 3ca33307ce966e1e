"""A long output into a pipe shows its progress on stderr when stderr is a terminal, and only then;
the output itself is the same either way."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.make_long_run import write_clones

EVENTS = 21_000  # above the 20,000 events from which progress is shown


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("progress") / "many.db"
    write_clones(db, EVENTS, "memory", many=True)
    return db


def _run(argv: list[str], *, stderr_tty: bool) -> tuple[bytes, str]:
    """stdout (a pipe) and stderr (a pseudo-terminal, or a pipe) of one process."""
    cmd = [sys.executable, "-m", "zymi_tui", *argv]
    if not stderr_tty:
        done = subprocess.run(cmd, capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout, done.stderr.decode()
    master, slave = os.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = bytearray()
    out = bytearray()
    assert proc.stdout is not None
    fds = [master, proc.stdout.fileno()]
    while fds:
        ready, _, _ = select.select(fds, [], [], 300)
        assert ready, "no output for 300 s"
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the pty's other end closed
                chunk = b""
            if not chunk:
                fds.remove(fd)
            (err if fd == master else out).extend(chunk)
    assert proc.wait(timeout=60) == 0, err
    os.close(master)
    return bytes(out), err.decode()


@pytest.mark.parametrize(
    ("argv", "what"),
    [(["events", "{db}", "--all", "--raw"], "listing"), (["replay", "{db}", "--json"], "replaying")],
    ids=["events", "replay"],
)
def test_progress_on_a_terminal_stderr_only(big_store: Path, argv: list[str], what: str) -> None:
    args = [a.replace("{db}", str(big_store)) for a in argv]
    out_tty, err_tty = _run(args, stderr_tty=True)
    out_pipe, err_pipe = _run(args, stderr_tty=False)
    assert out_tty == out_pipe and out_pipe  # the output does not depend on where stderr goes
    assert f"\r{what}: event " in err_tty
    assert f"{what}: event" not in err_pipe
    last = err_tty.replace("\r\n", "\n").rsplit("\r", 1)[-1]  # the terminal writes a line end as \r\n
    assert f"/{EVENTS} (" in last and last.strip().endswith("%)")
