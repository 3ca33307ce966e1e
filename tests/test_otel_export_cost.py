"""What the otel export no longer pays for, held to the texts it must keep: `as_json` (the C encoder
made once) writes what `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` writes, on values
hypothesis draws; and an export written to stdout loads neither the rich console (the command prints
no rich text there) nor the commands' tables and what-if machinery (`tuning_cmds`, and PyYAML
through them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ORACLE
from zymi_tui.telemetry.otel_content import as_json

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES)
def test_as_json_is_json_dumps(value: Any) -> None:
    assert as_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


STDOUT_EXPORT = """
import sys
from zymi_tui.cli import main
assert main(["export", sys.argv[1], "--format", "otel"]) == 0
sys.stdout.flush()
print(",".join(m for m in ("rich.console", "zymi_tui.commands.tuning_cmds", "yaml") if m in sys.modules),
      file=sys.stderr)
"""


def test_an_export_to_stdout_loads_no_rich_console_nor_tuning_commands(tmp_path: Path) -> None:
    db = tmp_path / "events.db"  # alone: beside its project, the project's YAML is read (PyYAML)
    db.write_bytes((ORACLE / "coding_default" / "events.db").read_bytes())
    proc = subprocess.run([sys.executable, "-c", STDOUT_EXPORT, str(db)], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.startswith(b'{"resourceSpans"')
    assert proc.stderr.decode().strip() == ""
