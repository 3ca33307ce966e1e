"""What the engine loads before a run's first event: the context builder's modules load with the first
agent step (after the first events are written), not with the engine's modules. That a step still
builds its context is what tests/test_engine_conformance.py checks against zymi's recorded requests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import NO_ZYMI, zymi_bin

LATER = ("zymi_tui.context.builder", "zymi_tui.context.rendered", "zymi_tui.events.replay_view")


def test_the_run_commands_modules_leave_the_context_builder_for_the_first_step() -> None:
    code = (
        "import sys\n"
        "from zymi_tui.cli import build_parser\n"
        "build_parser('run')\n"  # the run command's modules, as `zymi-tui run` imports them
        "import zymi_tui.engine.runtime, zymi_tui.engine.runner, zymi_tui.events.sqlite_write\n"
        f"print(sorted(m for m in {LATER!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


# The agent loop, the tool gate and the shell: what a `run` needs from its first step on, loaded after
# the run's first event is appended (the sandbox's probe, which says its line before the run, stays).
AFTER_FIRST_EVENT = (
    "zymi_tui.engine.agent",
    "zymi_tui.engine.tools",
    "zymi_tui.engine.policy",
    "zymi_tui.engine.shell",
    "zymi_tui.engine.shell_scan",
    "zymi_tui.engine.bash_parser",
    "zymi_tui.engine.nofollow",
)


def test_a_run_appends_its_first_event_before_loading_the_agent_and_the_tools(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "zymi_tui", "init"], cwd=tmp_path, capture_output=True, check=True)
    code = (
        "import sys\n"
        "import zymi_tui.engine.recorder as recorder\n"
        "emit, loaded = recorder.Recorder.emit, []\n"
        "async def first(self, *args, **kwargs):\n"
        "    if not loaded:\n"
        f"        loaded.append(sorted(m for m in {AFTER_FIRST_EVENT!r} if m in sys.modules))\n"
        "        print('at the first event:', loaded[0], file=sys.stderr, flush=True)\n"
        "    return await emit(self, *args, **kwargs)\n"
        "recorder.Recorder.emit = first\n"
        "from zymi_tui.cli import main\n"
        "sys.exit(main(['run', 'main', '-i', 'task=list the files']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Pipeline completed successfully." in done.stdout  # the agent and its tools did run, later
    assert "at the first event: []" in done.stderr, done.stderr
    zymi = zymi_bin()
    assert zymi is not None, NO_ZYMI
    checked = subprocess.run([zymi, "verify"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "\nVerified " in checked.stdout, checked.stdout  # the real zymi reads the store back
    calls = subprocess.run([zymi, "events", "--raw", "-l", "1000"], cwd=tmp_path, capture_output=True, text=True)
    assert '"type":"ToolCallCompleted"' in calls.stdout, calls.stdout  # the tools, loaded later, did run
