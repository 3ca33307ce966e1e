"""The CLI's figure tables (sweep, compare) cut no figure and no header word, piped at 80 columns: every
value `--json` gives appears whole in the table."""

from __future__ import annotations

import json
import os
import subprocess

from tests.conftest import ORACLE, zymi_tui_bin
from tests.waiting import LIMIT

STORE = [str(ORACLE / "coding_compaction" / "events.db"), "--project", str(ORACLE / "coding_compaction" / "project")]


def cli(*args: str) -> str:
    done = subprocess.run(
        [zymi_tui_bin(), *args], capture_output=True, text=True, timeout=LIMIT, env={**os.environ, "COLUMNS": "80"}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_sweep_table_at_80_columns_keeps_every_figure() -> None:
    grid = ["--window", "2,4", "--soft-cap", "8k,20k"]
    table = cli("sweep", *STORE, *grid)
    points = json.loads(cli("sweep", *STORE, *grid, "--json"))["points"]
    assert "…" not in table
    for p in points:
        row = next(line for line in table.splitlines() if f"{p['soft_cap_chars']:,}" in line
                   and f"{p['tokens_sum']:,}" in line)  # fmt: skip
        for key in ("observation_window", "hard_cap_chars", "tokens_peak", "chars_peak"):
            assert f"{p[key]:,}" in row, (key, row)
    for word in ("window", "compactions", "hard-cap", "figures"):
        assert word in table


def test_compare_table_at_80_columns_keeps_every_figure() -> None:
    table = cli("compare", *STORE, "--profiles", "recorded,chat")
    assert "…" not in table and "chars" in table
