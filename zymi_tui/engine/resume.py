"""Fork-resume (zymi's `resume`, ADR-0018 and ADR-0038), with knob overrides for the re-run steps.

A fork is a new stream: PipelineRequested (the parent's inputs), ResumeForked (naming the
parent), WorkflowStarted, then every frozen step (the steps not downstream of the fork step)
copied from the parent: its WorkflowNodeStarted/Completed on the run stream and its whole step
stream, re-id'd, timestamps kept. The fork step and its DAG-descendants then run on our engine
with the configs on disk. Everything is validated and read before the first event is written,
and the bootstrap is written in one transaction, so a bad request writes nothing and a failed
re-run leaves a sealed fork (PipelineCompleted{success: false}), never a half-written chain.

The knobs the re-run used are recorded as an extra `zymi_tui` field of ResumeForked (zymi's
readers ignore unknown fields); each re-run agent step also records them on its
WorkflowNodeStarted, as every run of our engine does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.engine.config import PipelineConfig
from zymi_tui.engine.dag import plan_levels
from zymi_tui.engine.loader import Workspace
from zymi_tui.engine.run_request import run_stream
from zymi_tui.engine.run_seal import seal_interrupted
from zymi_tui.engine.runner import ResumeHook, RunHalted, RunResult, Runtime, run_pipeline
from zymi_tui.errors import UserError
from zymi_tui.events.kinds import (
    Event,
    LlmCallCompleted,
    PipelineCompleted,
    PipelineRequested,
    ResumeForked,
    ToolCallCompleted,
    WorkflowNodeCompleted,
    WorkflowNodeStarted,
    WorkflowStarted,
)
from zymi_tui.events.messages import AssistantMessage
from zymi_tui.events.store import STEP_MARK, EventReader
from zymi_tui.events.stored import StoredEvent
from zymi_tui.project.errors import ProjectError


class ResumeError(UserError):
    """A fork that cannot be made; the message is one line (zymi's wording where zymi has one)."""

    title = "Resume"


@dataclass(frozen=True)
class ResumePlan:
    """What a fork will do (zymi's `ResumePlan`), computed from the parent and the project on disk."""

    pipeline: str
    parent_stream_id: str
    parent_correlation_id: str
    fork_at_step: str
    inputs: dict[str, str]
    frozen: list[str]  # DAG order: copied from the parent, not re-run
    re_executed: list[str]  # DAG order: the fork step and its descendants
    step_count: int
    shadowed_tools: list[tuple[str, str]] = field(default_factory=list)  # (step, no_resume tool)
    turns: int = 1  # the parent's requests (a chat's turns); the fork re-runs the first one's inputs

    def span_line(self) -> str:
        """Which part of the parent the fork re-runs: what a parent/fork comparison compares."""
        others = self.turns - 1
        rest = f"; the parent's other {others} turn(s) are not re-run" if others else ""
        return (
            f"  re-run span: turn 1 of {self.turns} (the parent's first request, its inputs), steps "
            f"{', '.join(self.re_executed)}{rest}"
        )


@dataclass(frozen=True)
class KnobChoice:
    """The knobs the re-run steps use, and how they were asked for (recorded on ResumeForked)."""

    knobs: ContextKnobs
    profile: str | None = None
    sets: tuple[str, ...] = ()

    @property
    def overridden(self) -> bool:
        return self.profile is not None or bool(self.sets)

    def record(self) -> dict[str, Any]:
        return {"knobs": self.knobs.values(), "profile": self.profile, "sets": list(self.sets)}

    def describe(self) -> str:
        asked = " ".join([f"--profile {self.profile}"] * (self.profile is not None) + [f"--set {s}" for s in self.sets])
        return f"{self.knobs.describe()}" + (f"  ({asked})" if asked else "  (the project's)")


@dataclass
class ForkOutcome:
    stream_id: str
    success: bool
    final_output: str | None
    error: str | None  # the halt reason or the failure that sealed the fork


# -- planning --------------------------------------------------------------------------------
def _dependents(pipeline: PipelineConfig, root: str) -> set[str]:
    """`root` and every step that transitively depends on it (zymi's `transitive_dependents`)."""
    out: set[str] = set()
    stack = [root]
    while stack:
        current = stack.pop()
        if current in out:
            continue
        out.add(current)
        stack.extend(s.id for s in pipeline.steps if current in s.depends_on)
    return out


def _shadowed(ws: Workspace, pipeline: PipelineConfig, steps: list[str]) -> list[tuple[str, str]]:
    """no_resume tools (tools/*.yml) a re-run step would call (zymi's `collect_shadowed_tools`)."""
    out: list[tuple[str, str]] = []
    for sid in steps:
        step = pipeline.step(sid)
        if step is None or step.kind == "ask":
            continue
        names = [step.tool or ""] if step.kind == "tool" else list(ws.agents[step.agent or ""].tools)
        out.extend((sid, n) for n in names if n in ws.tools and ws.tools[n].no_resume)
    return out


async def plan_resume(reader: EventReader, ws: Workspace, parent_stream_id: str, fork_at_step: str) -> ResumePlan:
    """Validate a fork as zymi's `plan_with` does; read-only."""
    if STEP_MARK in parent_stream_id:
        raise ResumeError(
            f"'{parent_stream_id}' is a step stream; fork the run stream '{parent_stream_id.split(STEP_MARK)[0]}'"
        )
    top = await reader.read_stream(parent_stream_id)
    if not top:
        raise ResumeError(f"parent stream '{parent_stream_id}' has no events (see `zymi-tui runs` for the run ids)")
    request = next((se for se in top if isinstance(se.event.kind, PipelineRequested)), None)
    if request is None:
        raise ResumeError(f"parent stream '{parent_stream_id}' has no PipelineRequested event — not a pipeline run")
    assert isinstance(request.event.kind, PipelineRequested)
    name = request.event.kind.pipeline
    pipeline = ws.pipelines.get(name)
    if pipeline is None:
        raise ResumeError(f"pipeline '{name}' from parent stream not found in current project")
    if pipeline.step(fork_at_step) is None:
        available = ", ".join(s.id for s in pipeline.steps)
        raise ResumeError(f"fork step '{fork_at_step}' not found in pipeline '{name}'. Available: [{available}]")
    try:
        levels = plan_levels(pipeline)
    except ProjectError as e:
        raise ResumeError(f"failed to build execution plan: {e}") from None
    rerun = _dependents(pipeline, fork_at_step)
    frozen = {s.id for s in pipeline.steps} - rerun
    completed = {k.node_id for se in top if isinstance(k := se.event.kind, WorkflowNodeCompleted) and k.success is True}
    for sid in sorted(frozen):
        if sid not in completed:
            raise ResumeError(
                f"step '{sid}' is upstream of fork point '{fork_at_step}' but did not complete "
                "successfully in parent stream — cannot resume"
            )
    for step in pipeline.steps:
        if step.id not in rerun:
            continue
        for dep in step.depends_on:
            if dep not in rerun and dep not in frozen:
                raise ResumeError(
                    f"step '{step.id}' now depends on '{dep}', which did not run in the parent stream — "
                    "start a new run instead"
                )
    order = [sid for level in levels for sid in level]
    re_executed = [s for s in order if s in rerun]
    return ResumePlan(
        pipeline=name,
        parent_stream_id=parent_stream_id,
        parent_correlation_id=request.event.correlation_id or str(uuid.uuid4()),
        fork_at_step=fork_at_step,
        inputs=dict(request.event.kind.inputs),
        frozen=[s for s in order if s in frozen],
        re_executed=re_executed,
        step_count=len(pipeline.steps),
        shadowed_tools=_shadowed(ws, pipeline, re_executed),
        turns=sum(1 for se in top if isinstance(se.event.kind, PipelineRequested)),
    )


def plan_lines(plan: ResumePlan, *, dry_run: bool) -> list[str]:
    """zymi's "Resume plan" block (cli/resume.rs `print_plan`), without the colours."""
    lines = ["Resume plan (dry-run)" if dry_run else "Resume plan"]
    lines.append(f"  pipeline: {plan.pipeline}    fork at: {plan.fork_at_step}")
    lines.append(f"  parent:   {plan.parent_stream_id}")
    if not plan.frozen:
        lines.append("  frozen:        (none — fork step is the first step)")
    else:
        lines.append(f"  frozen ({len(plan.frozen)}):    {', '.join(plan.frozen)}")
        lines.append("  ↳ events copied verbatim from parent; current configs NOT applied")
    lines.append(f"  re-execute ({len(plan.re_executed)}): {', '.join(plan.re_executed)}")
    if plan.turns > 1:  # a one-request run: zymi's block says it all (and stays byte for byte zymi's)
        lines.append(plan.span_line())
    if plan.shadowed_tools:
        lines.append(f"  shadowed on resume ({len(plan.shadowed_tools)}): no_resume tools in re-execute set —")
        lines.extend(f"    · {sid} → {tool}" for sid, tool in plan.shadowed_tools)
        lines.append("  ↳ bodies will NOT run; a synthetic placeholder is recorded with replayed:true")
    if not dry_run:
        lines.append("")
    return lines


# -- the frozen prefix -----------------------------------------------------------------------
def step_output(events: Sequence[StoredEvent]) -> str | None:
    """A finished step's output from its step stream (zymi's `extract_step_output`, ADR-0038)."""
    last_llm: LlmCallCompleted | None = None
    last_tool: ToolCallCompleted | None = None
    for se in events:
        k = se.event.kind
        if isinstance(k, LlmCallCompleted) and not k.has_tool_calls:
            last_llm = k
        elif isinstance(k, ToolCallCompleted):
            last_tool = k
    if last_llm is not None:
        msg = last_llm.response_message
        if isinstance(msg, AssistantMessage) and msg.content is not None:
            return msg.content
        return last_llm.content_preview
    if last_tool is not None:
        return last_tool.result or last_tool.result_preview
    return None


@dataclass
class _Frozen:
    outputs: dict[str, str]
    events: list[Event]  # the bootstrap, in order, ready to append


async def _bootstrap(reader: EventReader, plan: ResumePlan, stream: str, corr: str, knobs: KnobChoice) -> _Frozen:
    """Read the parent and build every bootstrap event in memory (nothing is written here)."""
    top = await reader.read_stream(plan.parent_stream_id)
    head = [
        Event.new(stream, PipelineRequested(pipeline=plan.pipeline, inputs=plan.inputs), "engine", corr),
        Event.new(
            stream,
            ResumeForked(
                parent_stream_id=plan.parent_stream_id,
                parent_correlation_id=plan.parent_correlation_id,
                fork_at_step=plan.fork_at_step,
                zymi_tui=knobs.record() | {"re_executed": plan.re_executed},
            ),
            "engine",
            corr,
        ),
        Event.new(
            stream,
            WorkflowStarted(user_message=f"pipeline: {plan.pipeline} (resumed)", node_count=plan.step_count),
            "engine",
            corr,
        ),
    ]
    outputs: dict[str, str] = {}
    for sid in plan.frozen:
        src = await reader.read_stream(f"{plan.parent_stream_id}{STEP_MARK}{sid}")
        output = step_output(src)
        if output is None:
            raise ResumeError(
                f"could not reconstruct output for frozen step '{sid}' from parent stream — no terminal "
                "LlmCallCompleted (agent step) or ToolCallCompleted (tool step) event found"
            )
        outputs[sid] = output
        started = next(
            (
                se.event.kind
                for se in top
                if isinstance(se.event.kind, WorkflowNodeStarted) and se.event.kind.node_id == sid
            ),
            WorkflowNodeStarted(node_id=sid, description=f"frozen from parent stream {plan.parent_stream_id}"),
        )
        head.append(Event.new(stream, started, "engine", corr))
        dst = f"{stream}{STEP_MARK}{sid}"
        head.extend(
            Event(
                id=str(uuid.uuid4()),
                stream_id=dst,
                timestamp=se.event.timestamp,
                kind=se.event.kind,
                correlation_id=corr,
                causation_id=None,
                source=se.event.source,
            )
            for se in src
        )
        head.append(Event.new(stream, WorkflowNodeCompleted(node_id=sid, success=True), "engine", corr))
    return _Frozen(outputs, head)


class _BatchWriter(Protocol):
    async def append_many(self, events: Sequence[Event]) -> list[StoredEvent]: ...


async def _write_all(rt: Runtime, events: list[Event]) -> None:
    """One transaction when the writer can (SQLite); the recorder's listeners hear every event."""
    writer = rt.recorder.writer
    if hasattr(writer, "append_many"):
        batch: _BatchWriter = writer  # type: ignore[assignment]
        stored = await batch.append_many(events)
    else:
        stored = [await writer.append(e) for e in events]
    for se in stored:
        for listener in list(rt.recorder.listeners):
            listener(se)


# -- the fork --------------------------------------------------------------------------------
OnStream = Callable[[str], None]


async def fork(
    rt: Runtime, plan: ResumePlan, knobs: KnobChoice, *, stream_id: str | None = None, on_stream: OnStream | None = None
) -> ForkOutcome:
    """Bootstrap the fork and re-run its steps on `rt` (whose knobs become `knobs.knobs`).

    Raises ResumeError before writing anything when the parent cannot be forked; after that the
    fork is always sealed: a failure is returned as `ForkOutcome(success=False, error=...)`.
    """
    if plan.shadowed_tools:
        sid, tool = plan.shadowed_tools[0]
        raise ResumeError(
            f"step '{sid}' would call '{tool}', marked no_resume; zymi-tui cannot shadow no_resume tools yet — "
            "use `zymi resume` for this fork"
        )
    stream = stream_id or run_stream(plan.pipeline)
    corr = str(uuid.uuid4())
    frozen = await _bootstrap(rt.reader, plan, stream, corr, knobs)
    rt.knobs = knobs.knobs
    try:
        await _write_all(rt, frozen.events)
    except asyncio.CancelledError:  # Ctrl-C while the fork's head is written: it commits, then is sealed
        await asyncio.shield(seal_interrupted(rt.recorder, stream, plan.pipeline, corr))
        raise
    if on_stream is not None:
        on_stream(stream)
    try:
        result: RunResult = await run_pipeline(
            rt, plan.pipeline, plan.inputs, correlation_id=corr, stream_id=stream, resume=ResumeHook(frozen.outputs)
        )
    except RunHalted as e:  # the runner sealed the fork
        return ForkOutcome(stream, False, None, str(e))
    except asyncio.CancelledError:  # the runner sealed it as interrupted
        raise
    except Exception as e:  # a failure the runner did not seal (store, tool runner): seal it here
        reason = f"fork failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        await rt.recorder.emit(
            stream,
            PipelineCompleted(pipeline=plan.pipeline, success=False, final_output=None, error=reason),
            "engine",
            corr,
        )
        await rt.recorder.checkpoint()
        return ForkOutcome(stream, False, None, reason)
    return ForkOutcome(stream, result.success, result.final_output, None)
