"""What the engine loads before a run's first event: the context builder's modules load with the first
agent step (after the first events are written), not with the engine's modules. That a step still
builds its context is what tests/test_engine_conformance.py checks against zymi's recorded requests."""

from __future__ import annotations

import subprocess
import sys

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
