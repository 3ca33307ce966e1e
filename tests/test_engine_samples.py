"""Sample stores, the demo project, `init` and `chat`: what our engine writes is what zymi's readers read."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.test_engine_failures import BIN, REAL_ZYMI
from tests.waiting import LIMIT, bounded, wait_until

SAMPLES = ROOT / "sample_stores"
SHIPPED = ROOT / "zymi_tui" / "data" / "sample"


def _rows(db: Path) -> list[tuple[str, str, str, dict[str, Any]]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT stream_id, kind_tag, source, data FROM events ORDER BY id").fetchall()
    con.close()
    return [(s, k, src, json.loads(d)["kind"]["data"]) for s, k, src, d in rows]


def _zymi_accepts(db: Path, tmp: Path) -> None:
    if not REAL_ZYMI.exists():
        return
    project = tmp / "check"
    (project / ".zymi").mkdir(parents=True, exist_ok=True)
    (project / "project.yml").write_text("name: check\n", encoding="utf-8")
    shutil.copy(db, project / ".zymi" / "events.db")
    for args in (["verify"], ["events", "--raw", "--limit", "100000"], ["runs", "--raw"]):
        proc = subprocess.run([str(REAL_ZYMI), "--no-venv", *args, "-d", str(project)], capture_output=True, text=True)
        assert proc.returncode == 0, f"zymi {args[0]}: {proc.stderr}"


@pytest.mark.parametrize("name", ["coding_long", "chat_session", "hard_cap"])
def test_sample_stores_are_read_by_zymi_and_carry_their_project(name: str, tmp_path: Path) -> None:
    db = SAMPLES / name / "events.db"
    assert (SAMPLES / name / "project" / "project.yml").is_file()
    _zymi_accepts(db, tmp_path)


def test_chat_session_has_many_runs_on_one_stream_forgetting_and_a_compaction() -> None:
    rows = _rows(SAMPLES / "chat_session" / "events.db")
    completed = [(s, src) for s, k, src, _ in rows if k == "pipeline_completed"]
    assert len(completed) >= 10 and {s for s, _ in completed} == {"chat-demo"}
    assert {src for _, src in completed} == {"zymi-serve"}
    assert any(k == "context_compacted" for _, k, _, _ in rows)
    # forgetting: with forget_after_turns=12 the sent message count stops growing with the history
    counts = [d["message_count"] for s, k, _, d in rows if k == "llm_call_started" and d["iteration"] > 0]
    assert max(counts) <= 2 + 12 * 8 and counts[-1] < sum(1 for _, k, _, _ in rows if k == "tool_call_completed")


def test_hard_cap_sample_fails_with_zymis_message() -> None:
    rows = _rows(SAMPLES / "hard_cap" / "events.db")
    done = next(d for _, k, _, d in rows if k == "pipeline_completed")
    assert done["success"] is False and done["final_output"] is None
    assert done["error"].startswith("[work] context build failed: context exceeds hard cap: ")
    assert done["error"].endswith(" chars > 8000 hard cap")


def test_runs_are_self_describing_and_the_demo_model_is_labelled() -> None:
    rows = _rows(SAMPLES / "coding_long" / "events.db")
    started = next(d for _, k, _, d in rows if k == "workflow_node_started")
    described = started["zymi_tui"]
    assert described["system_prompt"].startswith("You are a careful coding agent.")
    assert described["task"].startswith("Audit every module")
    assert described["knobs"]["soft_cap_chars"] == 30000 and described["provider"] == "demo"
    labels = [d["zymi_tui"] for _, k, _, d in rows if k == "llm_call_completed"]
    assert labels and all(label == {"provider": "demo", "model": "demo"} for label in labels)


def test_the_package_ships_one_sample_with_its_project() -> None:
    dbs = list(SHIPPED.rglob("events.db"))
    assert len(dbs) == 1 and (dbs[0].parent / "project" / "project.yml").is_file()


def test_init_demo_then_chat_on_one_stream_remembers_earlier_answers(tmp_path: Path) -> None:
    init = subprocess.run([str(BIN), "init", "--example", "demo"], cwd=tmp_path, capture_output=True, text=True)
    assert init.returncode == 0, init.stderr
    again = subprocess.run([str(BIN), "init"], cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode == 2
    assert "project.yml already exists — this directory is already a zymi project" in again.stderr
    chat = subprocess.run(
        [str(BIN), "chat", "--stream", "s1"],
        cwd=tmp_path,
        input="what is in billing?\nand ledger?\n",
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.count("bot> [demo model]") == 2
    rows = _rows(tmp_path / ".zymi" / "events.db")
    assert [k for s, k, _, _ in rows if s == "s1"][:2] == ["user_message_received", "pipeline_requested"]
    # the second run's first call carries the first run's turns (zymi's chat history, docs/engine.md#chat-history)
    first_calls = [d for s, k, _, d in rows if k == "llm_call_started" and d["iteration"] == 1]
    assert len(first_calls) == 2 and first_calls[1]["message_count"] > first_calls[0]["message_count"]
    _zymi_accepts(tmp_path / ".zymi" / "events.db", tmp_path)


def test_run_on_a_fresh_init_uses_the_demo_model(tmp_path: Path) -> None:
    assert subprocess.run([str(BIN), "init", "-n", "fresh"], cwd=tmp_path, capture_output=True).returncode == 0
    proc = subprocess.run(
        [str(BIN), "run", "main", "-i", "task=list the files"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Pipeline completed successfully." in proc.stdout and "[demo model]" in proc.stdout


def test_serve_with_the_stdin_connector_and_stdout_output(tmp_path: Path) -> None:
    import signal

    assert subprocess.run([str(BIN), "init", "--example", "demo"], cwd=tmp_path, capture_output=True).returncode == 0
    with (tmp_path / "project.yml").open("a", encoding="utf-8") as f:
        f.write(
            "connectors:\n  - type: stdin\n    name: term\n    pipeline: chat\n"
            "outputs:\n  - type: stdout\n    on: [ResponseReady]\n    template: 'BOT> {{ event.content }}'\n"
        )
    proc = subprocess.Popen(
        [str(BIN), "serve", "chat"], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    with bounded(proc):  # a hang fails the test within LIMIT; serve never outlives it
        assert proc.stdin and proc.stdout
        proc.stdin.write("hello\nand billing?\n")
        proc.stdin.flush()
        lines: list[str] = []
        while sum(line.startswith("BOT> ") for line in lines) < 2:  # each line ends a wait; EOF ends them all
            line = proc.stdout.readline()
            assert line, "serve ended before both answers: " + "".join(lines)
            lines.append(line)
        db = tmp_path / ".zymi" / "events.db"
        wait_until(lambda: sum(k == "pipeline_completed" for _, k, _, _ in _rows(db)) >= 2, "both runs sealed")
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=LIMIT)
    assert proc.returncode == 0 and "shutting down…" in rest
    assert lines[0].startswith("zymi serve: listening for PipelineRequested events targeting chat")
    assert sum(line.startswith("  -> received PipelineRequested for 'chat'") for line in lines) == 2
    assert not any("[reply] done" in line for line in lines)  # step lines are printed by `run` only
    rows = _rows(tmp_path / ".zymi" / "events.db")
    done = [(s, src) for s, k, src, _ in rows if k == "pipeline_completed"]
    assert done == [("term", "zymi-serve"), ("term", "zymi-serve")]
    _zymi_accepts(tmp_path / ".zymi" / "events.db", tmp_path)
