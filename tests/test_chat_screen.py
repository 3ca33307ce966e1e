"""Five messages to the demo model through the chat screen: the store, the real zymi, the curve, the replay."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.test_chat_support import (
    SIZE,
    capture_requests,
    chat_app,
    chat_screen,
    cli,
    demo_project,
    send,
    store_events,
    zymi_raw,
)
from tests.test_chat_support import zymi_verify as real_verify
from zymi_tui.events import kinds as k
from zymi_tui.tui.chat.widgets import TurnView
from zymi_tui.tui.plot import ContextPlot

MESSAGES = [
    "hello, what is in billing?",
    "audit all modules",
    "now look at the ledger",
    "audit everything once more",
    "thanks, what did you find?",
]
TURN_KINDS = ["UserMessageReceived", "PipelineRequested", "WorkflowStarted", "WorkflowNodeStarted"]
TURN_END = ["WorkflowNodeCompleted", "WorkflowCompleted", "OutputResolved", "ResponseReady", "PipelineCompleted"]


async def test_five_messages_store_curve_and_replay(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    app = chat_app(project)
    async with app.run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        capture = capture_requests(app)
        for text in MESSAGES:
            await send(pilot, text)
        views = list(screen.query(TurnView))
        assert [v.turn.user for v in views] == MESSAGES
        assert [v.turn.status for v in views] == ["done"] * 5
        plot = screen.query_one("#chat-plot", ContextPlot)
        points = [c for sc in plot.steps.values() for c in sc.calls]
        plotted_compactions = sum(len(sc.compactions) for sc in plot.steps.values())

    events = await store_events(project)
    # one chat = one run stream and its step stream, as zymi serve with a connector writes it
    assert {se.event.stream_id for se in events} == {"term", "term:step:reply"}
    run = [se for se in events if se.event.stream_id == "term"]
    corrs = list(dict.fromkeys(se.event.correlation_id for se in run if se.event.correlation_id))
    assert len(corrs) == 5
    for corr, text in zip(corrs, MESSAGES, strict=True):
        turn = [se.event for se in run if se.event.correlation_id == corr]
        names = [type(e.kind).__name__ for e in turn]
        assert names[:4] == TURN_KINDS
        assert [n for n in names if n in TURN_END] == TURN_END
        assert names[-1] == "PipelineCompleted" and turn[-1].source == "zymi-serve"
        assert turn[0].source == "chat" and turn[1].source == "chat"
        first = turn[0].kind
        assert isinstance(first, k.UserMessageReceived) and first.content.content == text
        done = turn[-1].kind
        assert isinstance(done, k.PipelineCompleted) and done.success

    # the real engine verifies our chains and reads every event
    verdict = real_verify(project)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    assert f"Verified {len(events)} event(s) across 2 stream(s)." in verdict.stdout
    raw = zymi_raw(project)
    assert sorted(r["id"] for r in raw) == sorted(se.event.id for se in events)

    # the curve: one point per agent LLM call, one marker per compaction (the demo compacts within 5 turns)
    started = [se for se in events if isinstance(se.event.kind, k.LlmCallStarted) and se.event.kind.iteration > 0]
    assert [p.chars for p in points] == [se.event.kind.approx_context_chars for se in started]  # type: ignore[union-attr]
    compactions = [se for se in events if isinstance(se.event.kind, k.ContextCompacted)]
    assert len(compactions) >= 1 and plotted_compactions == len(compactions)
    assert len(capture.agent_requests()) == len(started)

    # the sixth call's context as sent equals what `zymi-tui replay` rebuilds for it
    run_replay = cli("replay", str(project), "--json", "--messages")
    assert run_replay.returncode == 0, run_replay.stderr
    rows = [json.loads(line) for line in run_replay.stdout.splitlines() if line.startswith("{")]
    agent_rows = [r for r in rows if r.get("kind") == "agent"]  # the last line is the totals
    assert len(agent_rows) == len(started)
    sixth = agent_rows[5]
    assert sixth["sequence"] == started[5].event.sequence
    assert sixth["messages"] == capture.agent_requests()[5].messages
    assert sixth["chars"] == sixth["recorded_chars"]


async def test_resumed_chat_shows_history_and_remembers(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    async with chat_app(project).run_test(size=SIZE) as pilot:
        await send(pilot, "hello, what is in billing?")
    app = chat_app(project)
    async with app.run_test(size=SIZE) as pilot:
        screen = await chat_screen(pilot)
        assert [v.turn.user for v in screen.query(TurnView)] == ["hello, what is in billing?"]
        capture = capture_requests(app)
        await send(pilot, "and the ledger?")
    first = capture.agent_requests()[0].messages
    # docs/engine.md#chat-history: the current message comes before the earlier turn's answers and tool results
    assert first[1] == {"role": "user", "content": "and the ledger?"}
    assert any(m["role"] == "assistant" and "hello, what is in billing?" in (m.get("content") or "") for m in first)
    kinds = Counter(type(se.event.kind).__name__ for se in await store_events(project))
    assert kinds["UserMessageReceived"] == 2 and kinds["PipelineCompleted"] == 2
