"""A `run` process ends as soon as its work is done (no interpreter teardown), with all of its output
and its exit code; bashlex is loaded while the model thinks, ready for the first shell command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.waiting import LIMIT

# the command line as the process's own (cli.main() reads sys.argv), with a teardown marker
RUN = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('interpreter teardown', file=sys.stderr))\n"
    "from zymi_tui.cli import main\n"
    "sys.argv = ['zymi-tui', *sys.argv[1:]]\n"
    "sys.exit(main())\n"
)


def zymi_tui(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN, *argv], cwd=cwd, capture_output=True, text=True, timeout=LIMIT, check=False
    )


def test_a_run_ends_at_once_with_its_output_and_code(tmp_path: Path) -> None:
    init = zymi_tui(tmp_path, "init", "--example", "demo")
    assert init.returncode == 0, init.stderr
    assert "interpreter teardown" in init.stderr  # other commands end as before: the check can fail

    done = zymi_tui(tmp_path, "--no-venv", "run", "main", "-i", "task=list the files")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Pipeline: main\n")
    assert "Pipeline completed successfully.\n\nFinal output:\n[demo model] Done with: list the files." in done.stdout
    assert done.stdout.endswith("Nothing here came from a real model.\n")
    assert "interpreter teardown" not in done.stderr

    failed = zymi_tui(tmp_path, "run", "nope")
    assert failed.returncode == 2
    assert "pipeline 'nope' not found" in failed.stderr.splitlines()[0], failed.stderr
    assert "interpreter teardown" not in failed.stderr


def test_bashlex_preloaded_on_its_own_thread_is_the_one_the_policy_uses() -> None:
    code = (
        "import sys, threading\n"
        "from zymi_tui.engine import bash_parser\n"
        "bash_parser.preload()\n"
        "names = [t.name for t in threading.enumerate()]\n"
        "module = bash_parser.load()\n"  # waits for the thread's import, never a half-made module
        "assert module is sys.modules['bashlex'] and module.parse('echo hi | wc -l'), module\n"
        "for t in threading.enumerate():\n"
        "    if t.name == 'zymi-tui-bashlex':\n"
        "        t.join()\n"
        "bash_parser.preload()\n"  # loaded: no second thread
        "print('zymi-tui-bashlex' in names, threading.active_count())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT, check=True)
    assert done.stdout.split() == ["True", "1"], done.stdout + done.stderr
