"""Which run an LLM call belongs to and the LHAR role it gets, on events made up here (the recordings
hold no nested run): a pipeline requested inside another open run (its correlation id) is nested, and
its calls are `subagent`; a compaction call on a step belongs to the step's run whatever its own
correlation id."""

from __future__ import annotations

from zymi_tui.events.kinds import LlmCallStarted, PipelineRequested, WorkflowNodeStarted
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.export_calls import RunTracker
from zymi_tui.telemetry.lhar_export import agent_role

TS = "2026-12-02T15:43:52.175795254Z"


def _event(gid: int, stream: str, corr: str, kind: object, source: str = "engine") -> ReplayEvent:
    return ReplayEvent(gid, stream, gid, TS, source, corr, kind)  # type: ignore[arg-type]


def _row(stream: str, *, compaction: bool = False) -> CallContext:
    return CallContext(stream_id=stream, sequence=1, global_id=1, iteration=0 if compaction else 1,
                       is_compaction=compaction, recorded_chars=0, recorded_message_count=0,
                       recorded_input_tokens=None, rendered=None, prefix_inferred=False)  # fmt: skip


def test_a_pipeline_requested_inside_an_open_run_is_nested_and_its_calls_are_subagent() -> None:
    t = RunTracker()
    t.feed(_event(1, "pipeline-main-1", "c1", PipelineRequested(pipeline="main")))
    t.feed(_event(2, "pipeline-main-1", "c1", WorkflowNodeStarted(node_id="work", description='agent=coder, task="x"')))
    t.feed(_event(3, "pipeline-sub-2", "c1", PipelineRequested(pipeline="sub")))  # requested from main's step
    t.feed(_event(4, "pipeline-sub-2", "c1", WorkflowNodeStarted(node_id="dig", description="agent=digger")))
    main_call = _event(
        5, "pipeline-main-1:step:work", "c1", LlmCallStarted(iteration=1, message_count=2, approx_context_chars=10)
    )
    sub_call = _event(
        6, "pipeline-sub-2:step:dig", "c1", LlmCallStarted(iteration=1, message_count=2, approx_context_chars=10)
    )
    compaction = _event(
        7,
        "pipeline-main-1:step:work",
        "other",
        LlmCallStarted(iteration=0, message_count=2, approx_context_chars=10),
        source="compaction",
    )
    main_run, sub_run = t.step_of(main_call).run, t.step_of(sub_call).run
    assert (main_run.nested, sub_run.nested) == (False, True)
    assert t.step_of(sub_call).agent == "digger"
    assert agent_role(_row(main_call.stream_id), main_run) == "main"
    assert agent_role(_row(sub_call.stream_id), sub_run) == "subagent"
    assert t.step_of(compaction).run is main_run  # not a run of its own correlation id
    assert agent_role(_row(compaction.stream_id, compaction=True), main_run) == "compaction"
    assert main_run.trace_id != sub_run.trace_id


def test_a_step_nested_in_a_step_is_subagent() -> None:
    t = RunTracker()
    t.feed(_event(1, "chat-1", "c1", PipelineRequested(pipeline="chat")))
    run = t.run_of(_event(2, "chat-1", "c1", None))
    assert agent_role(_row("chat-1:step:reply"), run) == "main"
    assert agent_role(_row("chat-1:step:reply:step:helper"), run) == "subagent"
