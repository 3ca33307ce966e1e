"""Forks that cannot be made (one line, exit 2, nothing written) and forks that fail midway (sealed as
failed, every chain verifies, the parent untouched)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.test_resume_cli import (
    REAL_ZYMI,
    cli,
    demo_project,
    events,
    needs_zymi,
    rows,
    run_parent,
    stream_rows,
    zymi_runs,
)
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.engine.loader import load_workspace
from zymi_tui.engine.providers.base import LlmRequest, LlmResponse, ProviderError
from zymi_tui.engine.providers.demo import DemoProvider
from zymi_tui.engine.resume import ForkOutcome, KnobChoice, fork, plan_resume
from zymi_tui.engine.runtime import close_runtime, open_runtime

FRAGILE = """name: fragile
inputs:
  - name: topic
    required: true
steps:
  - id: first
    tool: execute_shell_command
    args:
      command: "cat workspace/missing.txt"
  - id: second
    agent: coder
    task: "Look at ${steps.first.output}"
    depends_on: [first]
"""


@pytest.fixture(scope="module")
def parent_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    project = demo_project(tmp_path_factory.mktemp("bad") / "proj")
    (project / "pipelines" / "fragile.yml").write_text(FRAGILE, encoding="utf-8")
    good = run_parent(project, "review", "topic=billing")
    failed = run_parent(project, "fragile", "topic=x")
    return project, good, failed


@pytest.fixture
def project(parent_project: tuple[Path, str, str], tmp_path: Path) -> tuple[Path, str, str]:
    """A private copy: some tests edit the project or fork."""
    src, good, failed = parent_project
    dst = tmp_path / "proj"
    shutil.copytree(src, dst)
    return dst, good, failed


def _count(project: Path) -> int:
    return int(rows(project, "SELECT COUNT(*) FROM events")[0][0])


def _refused(project: Path, args: list[str], needle: str) -> None:
    before = _count(project)
    proc = cli(project, "resume", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _count(project) == before


@pytest.mark.parametrize("dry", [False, True])
def test_unknown_stream(project: tuple[Path, str, str], dry: bool) -> None:
    p, _, _ = project
    extra = ["--dry-run"] if dry else []
    _refused(p, ["pipeline-review-nope", "--from-step", "report", *extra], "parent stream 'pipeline-review-nope'")


def test_unknown_step(project: tuple[Path, str, str]) -> None:
    p, good, _ = project
    _refused(p, [good, "--from-step", "ghost"], "fork step 'ghost' not found in pipeline 'review'. Available: [gather")


def test_upstream_step_did_not_succeed(project: tuple[Path, str, str]) -> None:
    p, _, failed = project
    _refused(p, [failed, "--from-step", "second"], "step 'first' is upstream of fork point 'second'")


def test_project_changed_so_the_step_is_gone(project: tuple[Path, str, str]) -> None:
    p, good, _ = project
    path = p / "pipelines" / "review.yml"
    path.write_text(path.read_text().replace("id: report", "id: summary").replace("[report]", "[summary]"))
    path.write_text(path.read_text().replace("step: report", "step: summary"))
    _refused(p, [good, "--from-step", "report"], "fork step 'report' not found in pipeline 'review'")


def test_bad_knob(project: tuple[Path, str, str]) -> None:
    p, good, _ = project
    _refused(p, [good, "--from-step", "report", "--set", "observation_window=-1"], "observation_window")
    _refused(p, [good, "--from-step", "report", "--profile", "nope"], "unknown profile")


def test_a_step_stream_is_not_a_run(project: tuple[Path, str, str]) -> None:
    p, good, _ = project
    _refused(p, [f"{good}:step:gather", "--from-step", "report"], "is a step stream")


class _FailsAt:
    """The demo model, failing at its n-th call (a provider error, or a crash of our own code)."""

    name = "demo"
    model = "demo"

    def __init__(self, n: int, error: Exception) -> None:
        self.inner, self.n, self.error, self.calls = DemoProvider(), n, error, 0

    async def complete(self, request: LlmRequest) -> LlmResponse:
        self.calls += 1
        if self.calls == self.n:
            raise self.error
        return await self.inner.complete(request)


async def _fork_with(project: Path, parent: str, provider: _FailsAt) -> ForkOutcome:
    ws = load_workspace(project)
    rt = await open_runtime(ws, ["review"], None, provider=provider)
    try:
        plan = await plan_resume(rt.reader, ws, parent, "report")
        return await fork(rt, plan, KnobChoice(ContextKnobs()))
    finally:
        await close_runtime(rt)


@pytest.mark.parametrize(
    "error",
    [ProviderError("API error (status 503): overloaded"), RuntimeError("socket exploded")],
    ids=["api", "crash"],
)
def test_provider_fails_mid_fork(project: tuple[Path, str, str], error: Exception) -> None:
    p, good, _ = project
    parent_rows = stream_rows(p, good)
    outcome = asyncio.run(_fork_with(p, good, _FailsAt(3, error)))
    assert not outcome.success
    assert outcome.error is not None and str(error) in outcome.error
    top = events(p, outcome.stream_id)
    last = top[-1] if top[-1]["type"] == "PipelineCompleted" else top[-2]  # ShellSessionClosed may follow
    assert last["type"] == "PipelineCompleted" and last["data"]["success"] is False
    assert str(error) in last["data"]["error"]
    report = events(p, f"{outcome.stream_id}:step:report")
    assert sum(e["type"] == "LlmCallStarted" for e in report) == 3  # it failed at the third call
    assert stream_rows(p, good) == parent_rows


@needs_zymi
def test_failed_fork_is_listed_as_failed_and_verifies(project: tuple[Path, str, str]) -> None:
    p, good, _ = project
    outcome = asyncio.run(_fork_with(p, good, _FailsAt(2, ProviderError("API error (status 500): boom"))))
    run: dict[str, Any] = {r["stream_id"]: r for r in zymi_runs(p)}[outcome.stream_id]
    assert run["status"] == "FAIL"
    assert run["fork"] == {"parent_stream_id": good, "fork_at_step": "report"}
    proc = cli(p, "verify", exe=REAL_ZYMI)
    assert proc.returncode == 0, proc.stdout + proc.stderr
