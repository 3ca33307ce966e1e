"""`zymi-tui replay --compare` is the issue's spelling of `zymi-tui compare --profiles`: same output."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from zymi_tui.cli import main

from .conftest import ORACLE, copy_store, oracle_db


def test_replay_compare_equals_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = copy_store(oracle_db("coding_compaction"), tmp_path)
    project = str(ORACLE / "coding_compaction" / "project")
    assert main(["compare", str(db), "--project", project, "--profiles", "recorded,chat", "--format", "json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["replay", str(db), "--project", project, "--compare", "recorded,chat", "--json"]) == 0
    via_replay = json.loads(capsys.readouterr().out)
    assert via_replay == direct
    assert [p["name"] for p in direct["profiles"]] == ["recorded", "chat"]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    calls, peak = con.execute(
        "SELECT COUNT(*), MAX(json_extract(data, '$.kind.data.approx_context_chars')) FROM events "
        "WHERE kind_tag = 'llm_call_started'"
    ).fetchone()
    recorded = direct["profiles"][0]["total"]
    assert (recorded["calls"], recorded["chars_peak"]) == (calls, peak)
