"""`replay --json` of a store with no project reads no price, no YAML and prints no table: PyYAML (~100 M
instructions to import, most of a replay's start-up), `importlib.resources` (with `tempfile` and `random`)
and rich are not imported. The rows must still come out (the command did its work)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.loaded_modules import RUN, loaded

ORACLE = Path(__file__).parent / "oracle"
NOT_LOADED = ("yaml", "importlib.resources", "tempfile", "random", "rich")  # and their submodules


def test_replay_json_without_a_project_loads_no_yaml_prices_or_rich(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    shutil.copy(ORACLE / "memory" / "events.db", db)  # alone: no project beside it
    modules = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(modules), "replay", str(db), "--json"],
        cwd=tmp_path, capture_output=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) > 1 and json.loads(lines[-1])["totals"] is True
    assert loaded(modules, NOT_LOADED) == []
