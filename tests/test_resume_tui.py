"""Pilot tests of fork-resume in the dashboard: the fork modal (start, Esc while running, the fork still
completes, P jumps parent ⇄ fork) and the parent/fork comparison; figures checked against the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from rich.console import Console
from textual.widgets import Static

from tests.test_resume_cli import CHAT, ENGINE, cli, demo_project, events, fork_of, rows, run_parent
from tests.waiting import pilot_until
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay.costs import ModelPrice, PriceTable
from zymi_tui.tui.app import DashboardApp, MainScreen
from zymi_tui.tui.resume.compare import ForkCompareScreen
from zymi_tui.tui.resume.figures import answer_diff, figure_rows, run_figures
from zymi_tui.tui.resume.modal import ForkModal
from zymi_tui.tui.target import Target

SIZE = (160, 50)
C2 = "00000000-0000-4000-8000-0000000000c2"  # the synthetic fork's correlation id


def slow_project(root: Path) -> Path:
    """The demo project whose last step sleeps, so a fork is still running when Esc is pressed."""
    demo_project(root)
    yml = root / "project.yml"
    yml.write_text(yml.read_text().replace('"find *"]', '"find *", "sleep *"]'))
    review = root / "pipelines" / "review.yml"
    review.write_text(review.read_text().replace('command: "echo stamped"', 'command: "sleep 2"'))
    return root


async def until(pilot: Any, cond: Any) -> None:
    await pilot_until(pilot, cond)


def _app(project: Path) -> DashboardApp:
    return DashboardApp(Target(SqliteStore(project / ".zymi" / "events.db"), project), theme="textual-dark")


async def test_fork_modal_esc_while_running_and_the_fork_completes(tmp_path: Path) -> None:
    project = slow_project(tmp_path / "proj")
    parent = run_parent(project, "review", "topic=billing")
    app = _app(project)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MainScreen))  # pushed after the app's start-up
        main = app.main
        await until(pilot, lambda: main.runs.find_stream(parent) is not None and main.selected is not None)
        await pilot.press("R")
        modal = app.screen
        assert isinstance(modal, ForkModal)
        await until(pilot, lambda: modal.plan is not None)
        assert modal.step == "stamp"  # every step succeeded: the default is the last one
        await pilot.press("up")  # -> report
        await until(pilot, lambda: modal.plan is not None and modal.plan.fork_at_step == "report")
        assert modal.plan is not None and modal.plan.frozen == ["gather"]
        await pilot.press("p")  # the first profile in name order: chat
        assert modal.knobs is not None and modal.knobs.profile == "chat"
        await pilot.press("enter")
        job = modal.job
        assert job is not None
        await until(pilot, lambda: job.stream_id is not None)
        assert job.state == "running"
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        assert job.state == "running"  # closed while running; the fork goes on
        await until(pilot, lambda: job.state != "running")
        assert job.state == "done", job.error
        assert job.stream_id is not None
        await until(pilot, lambda: main.runs.find_stream(job.stream_id or "") is not None)
        # P jumps from the parent to its fork and back (the list kept the parent selected)
        assert main.selected is not None and main.selected.stream_id == parent
        await pilot.press("P")
        await until(pilot, lambda: main.selected is not None and main.selected.stream_id == job.stream_id)
        info = main.query_one("#run-info", Static)
        await until(pilot, lambda: f"fork of {parent} at 'report'" in str(info.content))
        # the lineage line is on screen, not cut off (once the new content has been laid out)
        await until(pilot, lambda: info.size.height >= 3)
        await pilot.press("P")
        await until(pilot, lambda: main.selected is not None and main.selected.stream_id == parent)
    fork = fork_of(project, parent)
    assert fork == job.stream_id
    marker = next(e for e in events(project, fork) if e["type"] == "ResumeForked")["data"]
    assert marker["zymi_tui"]["knobs"] == CHAT
    completed = [e for e in events(project, fork) if e["type"] == "PipelineCompleted"]
    assert [c["data"]["success"] for c in completed] == [True]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A parent, then a fork at `report` after its task was edited on disk (so the answers differ)."""
    project = demo_project(tmp_path_factory.mktemp("cmp") / "proj")
    parent = run_parent(project, "review", "topic=billing")
    review = project / "pipelines" / "review.yml"
    review.write_text(review.read_text().replace("billing and ledger", "billing and auth"))
    proc = cli(project, "resume", parent, "--from-step", "report", "--profile", "chat")
    assert proc.returncode == 0, proc.stderr
    return {"project": project, "parent": parent, "fork": fork_of(project, parent)}


def _answer(project: Path, run: str) -> str:
    ((data,),) = rows(
        project, "SELECT data FROM events WHERE stream_id = ? AND kind_tag = 'pipeline_completed'", (run,)
    )
    return str(json.loads(data)["kind"]["data"]["final_output"])


def _agent_calls(project: Path, run: str, steps: tuple[str, ...] = ("report", "stamp")) -> list[int]:
    """approx_context_chars of the run's agent calls in the steps the fork re-ran (its span)."""
    out = []
    marks = ",".join("?" * len(steps))
    for (data,) in rows(
        project,
        f"SELECT data FROM events WHERE stream_id IN ({marks}) AND kind_tag = 'llm_call_started' ORDER BY id",
        tuple(f"{run}:step:{s}" for s in steps),
    ):
        d = json.loads(data)["kind"]["data"]
        if d["iteration"] > 0:
            out.append(int(d["approx_context_chars"]))
    return out


async def test_compare_view_shows_both_runs(compared: dict[str, Any]) -> None:
    project, parent, fork = compared["project"], compared["parent"], compared["fork"]
    app = _app(project)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MainScreen))  # pushed after the app's start-up
        main = app.main
        await until(pilot, lambda: main.runs.find_stream(fork) is not None and main.selected is not None)
        assert main.selected is not None and main.selected.stream_id == fork  # the newest run
        await pilot.press("C")
        screen = app.screen
        assert isinstance(screen, ForkCompareScreen)
        await until(pilot, lambda: screen.figures is not None)
        assert screen.figures is not None
        p, f = screen.figures
        assert (p.stream_id, f.stream_id) == (parent, fork)
        assert p.curve == _agent_calls(project, parent)
        assert f.curve == _agent_calls(project, fork)
        assert p.curve != f.curve
        assert (p.answer, f.answer) == (_answer(project, parent), _answer(project, fork))
        assert f.fork_at_step == "report" and f.knobs == CHAT
        assert screen.span is not None and screen.span.steps == {"report", "stamp"}
        assert "compared on the span the fork re-ran: turn 1 of 1, steps report, stamp" in str(
            screen.query_one("#cmp-head", Static).content
        )
        diff = [(d.op, d.text) for d in answer_diff(p.answer, f.answer)]
        assert ("del", "ledger") in diff and ("ins", "auth") in diff
        console = Console(record=True, width=150)
        console.print(screen.query_one("#cmp-table", Static).content)
        shown = console.export_text()
        assert "LLM calls" in shown
        assert f"{len(p.curve):,}" in shown and f"{len(f.curve):,}" in shown
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


def test_answer_diff_rebuilds_both_answers() -> None:
    old = "The modules follow one pattern;  a few carry TODOs.\nDone."
    new = "The modules follow two patterns; a few carry TODOs.\nDone!"
    pieces = answer_diff(old, new)
    assert "".join(p.text for p in pieces if p.op != "ins") == old
    assert "".join(p.text for p in pieces if p.op != "del") == new
    assert next(p.text for p in pieces if p.op == "del") == "one"
    assert answer_diff(None, None) == []


def test_cost_prices_the_recorded_usage_per_model(compared: dict[str, Any]) -> None:
    project, parent, fork = compared["project"], compared["parent"], compared["fork"]
    table = PriceTable(models={"demo": ModelPrice(input=3.0, cached_input=1.0, output=5.0)})
    for run in (parent, fork):
        usage = [0, 0, 0]
        for (data,) in rows(
            project,
            "SELECT data FROM events WHERE stream_id LIKE ? AND kind_tag = 'llm_call_completed'",
            (run + ":step:%",),
        ):
            u = json.loads(data)["kind"]["data"]["usage"]
            usage = [usage[0] + u["input_tokens"], usage[1] + u.get("cached_input_tokens", 0),
                     usage[2] + u["output_tokens"]]  # fmt: skip
        want = ((usage[0] - usage[1]) * 3.0 + usage[1] * 1.0 + usage[2] * 5.0) / 1_000_000
        figures = run_figures(run, _stored(project, run))
        got = figures.cost(table, None)
        assert got is not None and abs(got - want) < 1e-12
        assert figures.cost(PriceTable(), None) is None  # no price for `demo`: no cost, not zero
    assert [r[0] for r in figure_rows(figures, figures, table)][-1] == "cost (recorded tokens)"


def _stored(project: Path, run: str) -> list[Any]:
    from zymi_tui.events.envelope import decode_event
    from zymi_tui.events.stored import StoredEvent

    return [
        StoredEvent(gid, decode_event(data, seq), data)
        for gid, data, seq in rows(
            project,
            "SELECT id, data, sequence FROM events WHERE stream_id = ? OR stream_id LIKE ? ORDER BY id",
            (run, run + ":step:%"),
        )
    ]


def _chat_copy(tmp_path: Path) -> Path:
    """The recorded 16-turn chat (oracle chat_profile, stream chat-42) as a project folder with its store."""
    import shutil

    from tests.conftest import ORACLE

    project = tmp_path / "chat"
    shutil.copytree(ORACLE / "chat_profile" / "project", project)
    (project / ".zymi").mkdir()
    shutil.copy(ORACLE / "chat_profile" / "events.db", project / ".zymi" / "events.db")
    return project


def test_dry_run_says_which_turn_a_fork_of_a_chat_re_runs(tmp_path: Path) -> None:
    project = _chat_copy(tmp_path)
    dry = cli(project, "resume", "chat-42", "--from-step", "reply", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "  re-run span: turn 1 of 16 (the parent's first request, its inputs), steps reply; the parent's " \
           "other 15 turn(s) are not re-run" in dry.stdout.splitlines()  # fmt: skip


def test_fork_of_a_chat_is_compared_with_the_turn_it_re_ran(tmp_path: Path) -> None:
    """A fork of chat-42 at `reply` re-runs turn 1 only: the parent's figures and answer are turn 1's (the
    comparison showed all 16 turns of the parent against the fork's one). The fork here replays turn 1's
    recorded events, so both sides must be equal, and equal to turn 1 read from the store by SQL."""
    from zymi_tui.events.kinds import Event, PipelineRequested, ResumeForked
    from zymi_tui.events.stored import StoredEvent
    from zymi_tui.tui.resume.figures import span_figures

    project = _chat_copy(tmp_path)
    parent = _stored(project, "chat-42")
    ((corr,),) = rows(
        project, "SELECT json_extract(data, '$.correlation_id') FROM events WHERE stream_id = 'chat-42' "
        "AND kind_tag = 'pipeline_requested' ORDER BY id LIMIT 1",
    )  # fmt: skip
    turn1 = [se for se in parent if se.event.correlation_id == corr]
    fork_id = "pipeline-chat-fork"
    head = [
        Event.new(fork_id, PipelineRequested(pipeline="chat", inputs={}), "engine", C2),
        Event.new(fork_id, ResumeForked(parent_stream_id="chat-42", parent_correlation_id=corr,
                  fork_at_step="reply", zymi_tui={"re_executed": ["reply"]}), "engine", C2),
    ]  # fmt: skip
    copies = [msgspec.structs.replace(se.event, stream_id=se.event.stream_id.replace("chat-42", fork_id, 1))
              for se in turn1 if not isinstance(se.event.kind, PipelineRequested)]  # fmt: skip
    fork = [StoredEvent(10_000 + i, e, "") for i, e in enumerate([*head, *copies])]
    p, f, span = span_figures("chat-42", parent, fork_id, fork)
    assert span is not None and (span.turn, span.turns, span.steps) == (1, 16, frozenset({"reply"}))
    assert "turn 1 of 16" in span.describe()
    want_curve = [
        int(c) for (c,) in rows(
            project, "SELECT json_extract(data, '$.kind.data.approx_context_chars') FROM events WHERE stream_id = "
            "'chat-42:step:reply' AND kind_tag = 'llm_call_started' AND json_extract(data, '$.correlation_id') = ? "
            "AND json_extract(data, '$.kind.data.iteration') > 0 ORDER BY id", (corr,),
        )
    ]  # fmt: skip
    ((answer,),) = rows(
        project, "SELECT json_extract(data, '$.kind.data.final_output') FROM events WHERE stream_id = 'chat-42' "
        "AND kind_tag = 'pipeline_completed' AND json_extract(data, '$.correlation_id') = ?", (corr,),
    )  # fmt: skip
    assert p.curve == f.curve == want_curve and p.calls == f.calls == len(want_curve)
    assert p.answer == f.answer == answer
    assert [r[3] for r in figure_rows(p, f)][1:] == ["="] * 7  # like with like: every figure equal
    whole = run_figures("chat-42", parent)
    assert whole.calls > p.calls  # what the comparison used to set against the fork's one turn


async def test_demo_chat_fork_compares_turn_1_with_turn_1(tmp_path: Path) -> None:
    """The demo: six messages in the chat, a fork at `reply` (it re-runs turn 1). The comparison used to set
    the parent's six turns (42 calls) against the fork's one (9); on the same span, with the same knobs and
    the demo's deterministic model, every figure and the answer are equal."""
    import subprocess

    project = demo_project(tmp_path / "proj")
    chat = subprocess.run([str(ENGINE), "chat", "--plain"], cwd=project, capture_output=True, text=True, timeout=300,
                          input="one\ntwo\nthree\nfour\nfive\nsix\n/quit\n")  # fmt: skip
    assert chat.returncode == 0, chat.stderr
    ((parent, turns),) = rows(
        project, "SELECT stream_id, count(*) FROM events WHERE kind_tag = 'pipeline_requested' GROUP BY stream_id"
    )
    assert turns == 6
    dry = cli(project, "resume", parent, "--from-step", "reply", "--dry-run")
    assert "  re-run span: turn 1 of 6" in dry.stdout
    app = _app(project)
    async with app.run_test(size=SIZE) as pilot:  # the fork dialog (R) says it too
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        main = app.main
        await until(pilot, lambda: main.runs.find_stream(parent) is not None and main.selected is not None)
        await pilot.press("R")
        modal = app.screen
        assert isinstance(modal, ForkModal)
        await until(pilot, lambda: modal.plan is not None)
        await until(pilot, lambda: "re-run span: turn 1 of 6" in str(modal.query_one("#fork-body", Static).content))
        await pilot.press("escape")
    assert cli(project, "resume", parent, "--from-step", "reply").returncode == 0
    fork = fork_of(project, parent)
    app = _app(project)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        main = app.main
        await until(pilot, lambda: main.runs.find_stream(fork) is not None and main.selected is not None)
        await pilot.press("C")
        screen = app.screen
        assert isinstance(screen, ForkCompareScreen)
        await until(pilot, lambda: screen.figures is not None)
        assert screen.figures is not None
        p, f = screen.figures
        assert [r[3] for r in figure_rows(p, f)] == ["="] * 8
        assert p.answer == f.answer == _first_answer(project, parent)
        assert p.calls < run_figures(parent, _stored(project, parent)).calls
        assert "turn 1 of 6, steps reply" in str(screen.query_one("#cmp-head", Static).content)


def _first_answer(project: Path, run: str) -> str:
    ((data,),) = rows(
        project, "SELECT data FROM events WHERE stream_id = ? AND kind_tag = 'pipeline_completed' ORDER BY id LIMIT 1",
        (run,),
    )  # fmt: skip
    return str(json.loads(data)["kind"]["data"]["final_output"])
