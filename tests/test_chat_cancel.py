"""Cancelling a turn (Esc), quitting mid-turn (Ctrl-C), a provider that hangs: the store stays whole."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.test_chat_approvals import NEEDS_APPROVAL
from tests.test_chat_support import (
    SIZE,
    Capture,
    Hang,
    chat_app,
    chat_screen,
    demo_project,
    finish_turn,
    send,
    store_events,
    timed,
    wait_for,
    zymi_raw,
    zymi_verify,
)
from zymi_tui.events import kinds as k
from zymi_tui.tui.chat.approval import ApprovalModal
from zymi_tui.tui.chat.widgets import TurnView

CANCELLED = "cancelled by the user"


def _verified(project: Path, count: int) -> None:
    run = zymi_verify(project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Verified {count} event(s)" in run.stdout
    assert len(zymi_raw(project)) == count


def _tool_calls_answered(messages: list[dict[str, object]]) -> bool:
    asked = {c["id"] for m in messages for c in m.get("tool_calls", [])}  # type: ignore[attr-defined]
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    return asked <= answered


async def test_esc_cancels_a_turn_and_the_chat_goes_on(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    app = chat_app(project)
    async with app.run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        hang = Hang(timed(app).inner, hang_at=3)
        timed(app).inner = hang
        await send(pilot, "audit all modules", wait=False)
        await wait_for(pilot, hang.hanging.is_set)
        await pilot.press("escape")
        await finish_turn(pilot)
        assert [v.turn.status for v in screen.query(TurnView)] == ["cancelled"]
        capture = Capture(hang.inner)
        timed(app).inner = capture
        await send(pilot, "and the ledger?")
        assert [v.turn.status for v in screen.query(TurnView)] == ["cancelled", "done"]
    events = await store_events(project)
    kinds = [(se.event.stream_id, se.event.kind) for se in events]
    failed = [d for _, d in kinds if isinstance(d, k.LlmCallFailed)]
    assert len(failed) == 1 and failed[0].error == CANCELLED and failed[0].iteration == 3
    done = [d for _, d in kinds if isinstance(d, k.PipelineCompleted)]
    assert [(d.success, d.error) for d in done] == [(False, CANCELLED), (True, None)]
    assert _tool_calls_answered(capture.agent_requests()[0].messages)
    _verified(project, len(events))


async def test_cancel_while_an_approval_is_pending(tmp_path: Path) -> None:
    project = demo_project(tmp_path, NEEDS_APPROVAL)
    async with chat_app(project).run_test(size=SIZE) as pilot:
        await send(pilot, "hello", wait=False)
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ApprovalModal))
        screen = next(s for s in pilot.app.screen_stack if s.__class__.__name__ == "ChatScreen")
        screen.action_cancel_turn()
        await finish_turn(pilot)
        assert not isinstance(pilot.app.screen, ApprovalModal)
    events = await store_events(project)
    denied = [se.event for se in events if isinstance(se.event.kind, k.ApprovalDenied)]
    assert len(denied) == 1 and denied[0].source == "orchestrator"
    assert denied[0].kind.decided_by == "orchestrator" and denied[0].kind.reason == CANCELLED  # type: ignore[union-attr]
    tools = [se.event.kind for se in events if isinstance(se.event.kind, k.ToolCallCompleted)]
    assert len(tools) == 1 and tools[0].is_error and CANCELLED in tools[0].result
    _verified(project, len(events))


async def test_ctrl_c_mid_turn_quits_and_seals_the_turn(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    app = chat_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await chat_screen(pilot)
        hang = Hang(timed(app).inner, hang_at=2)
        timed(app).inner = hang
        await send(pilot, "hello", wait=False)
        await wait_for(pilot, hang.hanging.is_set)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)
    events = await store_events(project)
    last = events[-1].event
    assert isinstance(last.kind, k.PipelineCompleted) and last.kind.error == CANCELLED
    assert last.source == "zymi-serve"
    _verified(project, len(events))


async def test_a_hanging_provider_times_out_with_a_clear_error(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    app = chat_app(project, timeout_s=0.3)
    async with app.run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        timed(app).inner = Hang(timed(app).inner, hang_at=2)
        await send(pilot, "hello")
        (view,) = screen.query(TurnView)
        assert view.turn.status == "failed"
        shown = str(view.query_one(".error").render())
        assert "LLM call failed: no answer from demo/demo within 0.3 s (timed out" in shown
    events = await store_events(project)
    failed = [se.event.kind for se in events if isinstance(se.event.kind, k.LlmCallFailed)]
    assert len(failed) == 1 and failed[0].error.startswith("no answer from demo/demo within 0.3 s")
    done = events[-1].event.kind
    assert isinstance(done, k.PipelineCompleted) and not done.success and "no answer" in (done.error or "")
    _verified(project, len(events))


async def test_esc_as_the_answer_lands_leaves_the_finished_turn_finished(tmp_path: Path) -> None:
    """Esc between the turn's answer (ResponseReady, shown) and its PipelineCompleted: the turn is not failed,
    neither in the transcript nor in the store; and quitting in that moment closes it as finished too."""
    project = demo_project(tmp_path)
    app = chat_app(project)
    async with app.run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        recorder = screen.session.rt.recorder
        real_emit = recorder.emit
        answered, release = asyncio.Event(), asyncio.Event()

        async def held_after_the_answer(stream_id: str, kind: Any, *args: Any) -> Any:
            if answered.is_set() and not release.is_set():
                await release.wait()  # the turn's closing events wait here
            stored = await real_emit(stream_id, kind, *args)
            if isinstance(kind, k.ResponseReady):
                answered.set()
            return stored

        recorder.emit = held_after_the_answer  # type: ignore[method-assign,assignment]
        await send(pilot, "hello", wait=False)
        await wait_for(pilot, answered.is_set)
        await pilot.press("escape")
        await pilot.pause(0.2)
        release.set()
        await finish_turn(pilot)
        assert [v.turn.status for v in screen.query(TurnView)] == ["done"]
        # the second turn: quitting the app while it closes
        release.clear()
        answered.clear()
        await send(pilot, "and again", wait=False)
        await wait_for(pilot, answered.is_set)
        quitting = asyncio.ensure_future(screen.stop_turn())
        await pilot.pause(0.2)
        release.set()
        await quitting
    done = [se.event.kind for se in await store_events(project) if isinstance(se.event.kind, k.PipelineCompleted)]
    assert [(d.success, d.error) for d in done] == [(True, None), (True, None)]
    _verified(project, len(await store_events(project)))
