"""Ctrl-C during start-up (modules importing, the command line parsed, the project read): one line,
exit 130, never a traceback.

Each trial starts `zymi-tui run` on the offline demo model and sends SIGINT at an offset spread over
the time a whole uninterrupted run takes on this machine now (measured first, so the sweep follows the
load). A SIGINT can still land before the interpreter runs any code of zymi-tui (the exec, CPython's
own initialisation, the console script's `import re`): the process then dies of the signal, or CPython
prints its own start-up error, and no frame of zymi-tui is involved; such trials are counted apart, and
most trials must land inside zymi-tui's own start-up for the test to mean anything.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.waiting import LIMIT

from .conftest import zymi_tui_bin

TRIALS = 24
INTERRUPTED = "interrupted (Ctrl-C)"
# a traceback frame in a file of the package: its code ran (the console script's own line, `from zymi_tui.cli
# import main`, names the package while importlib is still looking for it: no code of it has run then)
RAN_ZYMI_TUI = re.compile(r'File "[^"]*[/\\]zymi_tui[/\\]')


def _project(tmp: Path) -> Path:
    tmp.mkdir()
    done = subprocess.run([zymi_tui_bin(), "init"], cwd=tmp, capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0, done.stderr
    return tmp


def _run(cwd: Path, command: list[str], offset: float | None) -> tuple[int, str, float]:
    """(exit code, stderr, seconds from start to exit) of one `run`, interrupted after `offset` s."""
    start = time.monotonic()
    p = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if offset is not None:
        time.sleep(offset)
        p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=LIMIT)
    return p.returncode, err, time.monotonic() - start


def _verdict(code: int, err: str) -> str:
    if code == 0 and not err.strip():
        return "finished"  # the run was over before the signal
    if code == 130 and err.count("\n") == 1 and err.startswith(INTERRUPTED):
        return "interrupted"
    if not RAN_ZYMI_TUI.search(err) and (
        code == -signal.SIGINT or "Fatal Python error" in err or "KeyboardInterrupt" in err
    ):
        return "before zymi-tui"  # the signal landed in the exec, CPython's own start-up or the package's lookup
    return "wrong"


@pytest.mark.parametrize("how", ["script", "module"])
def test_sigint_during_start_up_prints_one_line_and_exits_130(how: str, tmp_path: Path) -> None:
    # two trials at a time, each on a project of its own (concurrent writers on one store are not what
    # is tested here)
    cwds = [_project(tmp_path / "a"), _project(tmp_path / "b")]
    command = [zymi_tui_bin()] if how == "script" else [sys.executable, "-m", "zymi_tui"]
    command += ["run", "main", "-i", "task=sigint"]
    whole = min(_run(cwds[0], command, None)[2] for _ in range(2))
    offsets = [whole * 1.2 * i / TRIALS for i in range(TRIALS)]

    def trials(k: int) -> list[tuple[float, int, str]]:
        return [(off, *_run(cwds[k], command, off)[:2]) for off in offsets[k::2]]

    with ThreadPoolExecutor(2) as pool:
        results = [r for rs in pool.map(trials, range(2)) for r in rs]
    verdicts = [(round(off, 3), _verdict(code, err), code, err[-400:]) for off, code, err in results]
    wrong = [v for v in verdicts if v[1] == "wrong"]
    assert not wrong, f"a run of {whole:.2f} s, interrupted at these offsets: {wrong}"
    inside = sum(1 for v in verdicts if v[1] == "interrupted")
    assert inside >= TRIALS // 3, f"too few trials landed in zymi-tui's start-up to tell: {verdicts}"
