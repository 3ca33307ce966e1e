"""Approvals in the chat's modal, recorded as zymi records them (docs/engine.md#approvals)."""

from __future__ import annotations

from pathlib import Path

from tests.test_chat_support import SIZE, chat_app, demo_project, finish_turn, send, store_events, wait_for, zymi_raw
from zymi_tui.events import kinds as k
from zymi_tui.tui.chat.approval import ApprovalModal

# the demo agent's first tool call is `ls workspace/src workspace/docs`: make it need a person
NEEDS_APPROVAL = '  require_approval: ["ls *"]\n'


async def _answer(project: Path, *keys: str) -> None:
    async with chat_app(project).run_test(size=SIZE) as pilot:
        await send(pilot, "hello, what is in billing?", wait=False)
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ApprovalModal))
        modal = pilot.app.screen
        await wait_for(pilot, lambda: bool(modal.query("#approval-why")))
        await pilot.pause()
        assert "Shell command requires approval: ls workspace/src workspace/docs" in str(
            modal.query_one("#approval-why").render()
        )
        await pilot.press(*keys)
        await finish_turn(pilot)
        assert not isinstance(pilot.app.screen, ApprovalModal)


def _approval_events(events: list) -> tuple[k.ApprovalRequested, k.EventData, k.ToolCallCompleted]:  # type: ignore[type-arg]
    requested = [se.event for se in events if isinstance(se.event.kind, k.ApprovalRequested)]
    decided = [se.event for se in events if isinstance(se.event.kind, (k.ApprovalGranted, k.ApprovalDenied))]
    assert len(requested) == 1 and len(decided) == 1
    assert requested[0].source == "orchestrator" and decided[0].source == "approval_channel"
    assert requested[0].stream_id == decided[0].stream_id == "term"
    req, dec = requested[0].kind, decided[0].kind
    assert isinstance(req, k.ApprovalRequested)
    assert dec.approval_id == req.approval_id  # type: ignore[attr-defined]
    first_tool = next(se.event.kind for se in events if isinstance(se.event.kind, k.ToolCallCompleted))
    assert isinstance(first_tool, k.ToolCallCompleted)
    return req, dec, first_tool


async def test_approval_granted(tmp_path: Path) -> None:
    project = demo_project(tmp_path, NEEDS_APPROVAL)
    await _answer(project, "a")
    events = await store_events(project)
    req, dec, tool = _approval_events(events)
    assert req.channel == "terminal" and req.explanation is None
    assert isinstance(dec, k.ApprovalGranted)
    assert dec.decided_by == "terminal:terminal" and dec.reason is None
    assert not tool.is_error and "billing.py" in tool.result  # the command ran
    done = [se.event.kind for se in events if isinstance(se.event.kind, k.PipelineCompleted)]
    assert len(done) == 1 and done[0].success
    assert len(zymi_raw(project)) == len(events)


async def test_approval_denied_with_an_explanation(tmp_path: Path) -> None:
    project = demo_project(tmp_path, NEEDS_APPROVAL)
    await _answer(project, "e", *"not on my laptop", "enter")
    events = await store_events(project)
    _req, dec, tool = _approval_events(events)
    assert isinstance(dec, k.ApprovalDenied)
    assert dec.decided_by == "terminal:terminal" and dec.reason == "not on my laptop"
    assert tool.is_error and tool.result == "[rejected by human]"
    assert len(zymi_raw(project)) == len(events)


async def test_approval_denied_plainly(tmp_path: Path) -> None:
    project = demo_project(tmp_path, NEEDS_APPROVAL)
    await _answer(project, "d")
    _req, dec, tool = _approval_events(await store_events(project))
    assert isinstance(dec, k.ApprovalDenied) and dec.reason is None
    assert tool.result == "[rejected by human]"
