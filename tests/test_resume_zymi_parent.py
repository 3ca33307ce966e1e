"""Forking a run the real zymi made: zymi's run fails at a step, the step is fixed on disk, and both the
real `zymi resume` and ours fork it. Our fork must hold the same events as zymi's (ids, times, pids
aside), and the real zymi must list it and verify it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.test_resume_cli import REAL_ZYMI, cli, events, needs_zymi, rows, zymi_runs

PROJECT = """name: tools_only
version: "0.1"
policy:
  enabled: true
  allow: ["echo *", "cat *"]
"""
CHAIN = """name: chain
inputs:
  - name: word
    required: true
steps:
  - id: first
    tool: execute_shell_command
    args:
      command: "echo first ${inputs.word}"
  - id: second
    tool: execute_shell_command
    args:
      command: "echo second got ${steps.first.output}"
    depends_on: [first]
  - id: third
    tool: execute_shell_command
    args:
      command: "cat ${steps.second.output}"
    depends_on: [second]
output:
  step: third
"""
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

pytestmark = needs_zymi


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = tmp_path_factory.mktemp("zparent") / "proj"
    (project / "pipelines").mkdir(parents=True)
    (project / "project.yml").write_text(PROJECT, encoding="utf-8")
    (project / "pipelines" / "chain.yml").write_text(CHAIN, encoding="utf-8")
    run = cli(project, "run", "chain", "-i", "word=hi", exe=REAL_ZYMI)
    assert run.returncode == 1  # `cat second got first hi` fails: the run fails at `third`
    (parent,) = [r["stream_id"] for r in zymi_runs(project)]
    fixed = CHAIN.replace('"cat ${steps.second.output}"', '"echo third ${steps.second.output}"')
    (project / "pipelines" / "chain.yml").write_text(fixed, encoding="utf-8")
    theirs = cli(project, "resume", parent, "--from-step", "third", exe=REAL_ZYMI)
    assert theirs.returncode == 0, theirs.stderr
    (zymi_fork,) = [r["stream_id"] for r in zymi_runs(project) if r["fork"]]
    ours = cli(project, "resume", parent, "--from-step", "third")
    assert ours.returncode == 0, ours.stderr
    our_fork = next(r["stream_id"] for r in zymi_runs(project) if r["fork"] and r["stream_id"] != zymi_fork)
    return {"project": project, "parent": parent, "theirs": zymi_fork, "ours": our_fork, "out": ours.stdout}


def _normal(project: Path, run: str) -> dict[str, list[tuple[str, str, str]]]:
    """Per stream suffix: (kind, source, data) with run ids, uuids and pids blanked, and our extra field dropped."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for (stream,) in rows(
        project, "SELECT DISTINCT stream_id FROM events WHERE stream_id = ? OR stream_id LIKE ?", (run, run + ":%")
    ):
        items = []
        for e in events(project, stream):
            data = dict(e["data"])
            data.pop("zymi_tui", None)
            data.pop("duration_ms", None)
            data.pop("pid", None)
            text = UUID.sub("<id>", json.dumps(data, sort_keys=True).replace(run, "<run>"))
            items.append((e["type"], e["source"], text))
        out[stream.replace(run, "<run>")] = items
    return out


def test_our_fork_holds_the_events_zymis_fork_holds(forks: dict[str, Any]) -> None:
    p = forks["project"]
    ours, theirs = _normal(p, forks["ours"]), _normal(p, forks["theirs"])
    assert set(ours) == {"<run>", "<run>:step:first", "<run>:step:second", "<run>:step:third"}
    assert ours == theirs


def test_frozen_steps_are_the_parents(forks: dict[str, Any]) -> None:
    p, parent, fork = forks["project"], forks["parent"], forks["ours"]
    for step in ("first", "second"):
        assert events(p, f"{fork}:step:{step}") == events(p, f"{parent}:step:{step}")


def test_real_zymi_lists_and_verifies_our_fork(forks: dict[str, Any]) -> None:
    p = forks["project"]
    run = {r["stream_id"]: r for r in zymi_runs(p)}[forks["ours"]]
    assert run["status"] == "ok"
    assert run["fork"] == {"parent_stream_id": forks["parent"], "fork_at_step": "third"}
    proc = cli(p, "verify", exe=REAL_ZYMI)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Final output:\nthird second got first hi\n" in forks["out"]
