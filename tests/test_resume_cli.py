"""`zymi-tui resume`: a fork of a demo-model run under the chat profile, checked against the parent,
against `zymi-tui replay --profile chat` (the context engine's prediction) and against the real
`zymi` binary (`runs --raw`, `verify`, `resume --dry-run`). No network: the offline demo model.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NO_ZYMI
from tests.waiting import LIMIT
from zymi_tui.engine.providers.demo_workspace import write_demo_project

BIN = Path(sys.executable).parent
ENGINE = BIN / "zymi-tui"
REAL_ZYMI = BIN / "zymi"
needs_zymi = pytest.mark.skipif(not REAL_ZYMI.exists(), reason=NO_ZYMI)

# gather has no write_memory tool: zymi's fork starts with empty memory (the frozen steps' MemoryWritten
# live on the parent's run stream and are not copied), so a memory write upstream would change the fork
# step's system prompt and the comparison with the parent would not isolate the knobs.
SCOUT = """name: scout
description: "Looks around"
system_prompt: "You are a scout. Look at the files under workspace/ and list what you saw."
tools:
  - read_file
  - execute_shell_command
max_iterations: 40
"""
REVIEW = """name: review
description: "gather, then report, then stamp"
inputs:
  - name: topic
    required: true
steps:
  - id: gather
    agent: scout
    task: "Look at the ${inputs.topic} code"
  - id: report
    agent: coder
    task: "Write a short report on billing and ledger"
    depends_on: [gather]
  - id: stamp
    tool: execute_shell_command
    args:
      command: "echo stamped"
    depends_on: [report]
output:
  step: report
"""
CHAT = {  # the chat profile, as the oracle README records it (2 / 40000 / 80000 / 2 / 12)
    "observation_window": 2,
    "soft_cap_chars": 40000,
    "hard_cap_chars": 80000,
    "min_tail_turns": 2,
    "forget_after_turns": 12,
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def demo_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_demo_project(root, "resume_demo")
    (root / "agents" / "scout.yml").write_text(SCOUT, encoding="utf-8")
    (root / "pipelines" / "review.yml").write_text(REVIEW, encoding="utf-8")
    return root


def cli(project: Path, *args: str, exe: Path = ENGINE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], cwd=project, capture_output=True, text=True, timeout=LIMIT)


def zymi_runs(project: Path) -> list[dict[str, Any]]:
    proc = cli(project, "runs", "--raw", exe=REAL_ZYMI)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def run_parent(project: Path, pipeline: str, *inputs: str) -> str:
    """Run with our engine; the new run's stream id (the newest run)."""
    db = project / ".zymi" / "events.db"
    before = {r[0] for r in rows(project, "SELECT DISTINCT stream_id FROM events")} if db.exists() else set()
    proc = cli(project, "run", pipeline, *[a for i in inputs for a in ("-i", i)])
    assert proc.returncode in (0, 1), proc.stderr
    new = {r[0] for r in rows(project, "SELECT DISTINCT stream_id FROM events")} - before
    (stream,) = [s for s in new if ":step:" not in s]
    return stream


def rows(project: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{project / '.zymi' / 'events.db'}?mode=ro", uri=True) as db:
        return list(db.execute(sql, params))


def stream_rows(project: Path, run: str) -> list[tuple[Any, ...]]:
    """Every column of every row of a run and its step streams."""
    return rows(
        project, "SELECT * FROM events WHERE stream_id = ? OR stream_id LIKE ? ORDER BY id", (run, run + ":step:%")
    )


def events(project: Path, stream: str) -> list[dict[str, Any]]:
    """The events of one stream in sequence order: kind type, kind data, timestamp, source."""
    out = []
    for data, ts, source in rows(
        project, "SELECT data, timestamp, source FROM events WHERE stream_id = ? ORDER BY sequence", (stream,)
    ):
        env = json.loads(data)
        out.append({"type": env["kind"]["type"], "data": env["kind"]["data"], "ts": ts, "source": source})
    return out


def fork_of(project: Path, parent: str) -> str:
    (fork,) = [
        r[0]
        for r in rows(project, "SELECT stream_id, data FROM events WHERE kind_tag = 'resume_forked'")
        if json.loads(r[1])["kind"]["data"]["parent_stream_id"] == parent
    ]
    return str(fork)


def calls(project: Path, stream: str) -> list[int]:
    return [int(e["data"]["approx_context_chars"]) for e in events(project, stream) if e["type"] == "LlmCallStarted"]


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = demo_project(tmp_path_factory.mktemp("resume") / "proj")
    parent = run_parent(project, "review", "topic=billing")
    parent_rows = stream_rows(project, parent)
    replay = cli(project, "replay", ".", "--profile", "chat", "--json")
    assert replay.returncode == 0, replay.stderr
    predicted = [json.loads(line) for line in replay.stdout.splitlines()]
    dry = cli(project, "resume", parent, "--from-step", "report", "--profile", "chat", "--dry-run")
    rows_after_dry = rows(project, "SELECT COUNT(*) FROM events")
    proc = cli(project, "resume", parent, "--from-step", "report", "--profile", "chat")
    assert proc.returncode == 0, proc.stderr
    return {
        "project": project, "parent": parent, "parent_rows": parent_rows, "predicted": predicted, "dry": dry,
        "rows_after_dry": rows_after_dry, "proc": proc, "fork": fork_of(project, parent),
    }  # fmt: skip


def test_dry_run_prints_the_plan_and_writes_nothing(forked: dict[str, Any]) -> None:
    dry = forked["dry"]
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[:6] == [
        "Resume plan (dry-run)",
        "  pipeline: review    fork at: report",
        f"  parent:   {forked['parent']}",
        "  frozen (1):    gather",
        "  ↳ events copied verbatim from parent; current configs NOT applied",
        "  re-execute (2): report, stamp",
    ]
    assert "window 2, soft 40000, hard 80000, min_tail 2, forget 12" in dry.stdout
    parent_count = len(forked["parent_rows"])
    assert forked["rows_after_dry"] == [(parent_count,)]


@needs_zymi
def test_dry_run_block_is_zymis(forked: dict[str, Any]) -> None:
    project, parent = forked["project"], forked["parent"]
    ours = cli(project, "resume", parent, "--from-step", "gather", "--dry-run")
    theirs = cli(project, "resume", parent, "--from-step", "gather", "--dry-run", exe=REAL_ZYMI)
    assert theirs.returncode == 0, theirs.stderr
    assert ours.stdout == ANSI.sub("", theirs.stdout)


def test_frozen_events_equal_the_parents(forked: dict[str, Any]) -> None:
    project, parent, fork = forked["project"], forked["parent"], forked["fork"]
    theirs, ours = events(project, f"{parent}:step:gather"), events(project, f"{fork}:step:gather")
    assert len(ours) == len(theirs) > 4
    assert ours == theirs  # kinds, data, timestamps, sources, order
    top = events(project, fork)
    assert [e["type"] for e in top[:3]] == ["PipelineRequested", "ResumeForked", "WorkflowStarted"]
    parent_started = next(e for e in events(project, parent) if e["type"] == "WorkflowNodeStarted")
    assert top[3]["data"] == parent_started["data"] and top[3]["data"]["node_id"] == "gather"
    assert top[4]["type"] == "WorkflowNodeCompleted" and top[4]["data"] == {"node_id": "gather", "success": True}


def test_resume_forked_names_the_parent_and_records_the_knobs(forked: dict[str, Any]) -> None:
    project, parent, fork = forked["project"], forked["parent"], forked["fork"]
    marker = next(e for e in events(project, fork) if e["type"] == "ResumeForked")["data"]
    (parent_corr,) = rows(
        project, "SELECT correlation_id FROM events WHERE stream_id = ? AND kind_tag = 'pipeline_requested'", (parent,)
    )
    assert marker["parent_stream_id"] == parent
    assert marker["fork_at_step"] == "report"
    assert marker["parent_correlation_id"] == parent_corr[0]
    assert marker["zymi_tui"]["knobs"] == CHAT
    assert marker["zymi_tui"]["profile"] == "chat"


def test_rerun_calls_use_the_new_knobs(forked: dict[str, Any]) -> None:
    """Each call of the re-run step sends what `replay --profile chat` predicts for the parent's call."""
    project, parent, fork = forked["project"], forked["parent"], forked["fork"]
    predicted = [r["chars"] for r in forked["predicted"] if r.get("stream_id") == f"{parent}:step:report"]
    recorded_parent = calls(project, f"{parent}:step:report")
    recorded_fork = calls(project, f"{fork}:step:report")
    assert recorded_fork[0] == predicted[0]  # the first call of the fork step
    assert recorded_fork == predicted  # and every later one (the demo model's trajectory is the same)
    assert recorded_fork != recorded_parent  # the knobs did change what was sent


def test_parent_untouched(forked: dict[str, Any]) -> None:
    assert stream_rows(forked["project"], forked["parent"]) == forked["parent_rows"]


@needs_zymi
def test_real_zymi_lists_the_fork_and_verifies_every_chain(forked: dict[str, Any]) -> None:
    project, parent, fork = forked["project"], forked["parent"], forked["fork"]
    by_id = {r["stream_id"]: r for r in zymi_runs(project)}
    assert by_id[fork]["fork"] == {"parent_stream_id": parent, "fork_at_step": "report"}
    assert by_id[fork]["status"] == "ok"
    assert by_id[parent]["fork"] is None
    proc = cli(project, "verify", exe=REAL_ZYMI)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{fork}:step:gather" in proc.stdout and f"{fork}:step:report" in proc.stdout


def test_cli_reports_the_new_stream(forked: dict[str, Any]) -> None:
    out = forked["proc"].stdout
    assert f"New stream: {forked['fork']}" in out
    assert "Pipeline completed successfully." in out
    assert out.startswith("Resume plan\n")
