"""The pipeline runner (docs/engine.md#runner): DAG levels, parallel steps, tool/ask steps, output,
bookkeeping events."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.engine.approvals import ApprovalHandler
from zymi_tui.engine.config import PipelineConfig, StepConfig
from zymi_tui.engine.dag import plan_levels
from zymi_tui.engine.loader import Workspace
from zymi_tui.engine.providers.base import Provider
from zymi_tui.engine.recorder import Recorder
from zymi_tui.engine.run_request import RequestedRun, run_inputs, run_stream
from zymi_tui.engine.run_scope import RunScope, StepError, StepResult
from zymi_tui.engine.run_seal import seal_interrupted
from zymi_tui.engine.templating import cut_bytes, substitute
from zymi_tui.engine.when_expr import WhenError, parse_when
from zymi_tui.events.kinds import (
    EventData,
    OutputResolved,
    OutputVia,
    PipelineCompleted,
    PipelineRequested,
    ReasoningAnswered,
    ReasoningRequested,
    ResponseReady,
    StepSkipped,
    ToolCallCompleted,
    ToolCallRequested,
    WorkflowCompleted,
    WorkflowNodeCompleted,
    WorkflowNodeStarted,
    WorkflowStarted,
)
from zymi_tui.events.store import EventReader

if TYPE_CHECKING:  # loaded with a run's first step, after its first events (test_engine_startup_modules.py)
    from zymi_tui.engine.sandbox import Sandbox
    from zymi_tui.engine.tools import ToolRunner

Printer = Callable[[str], None]


class RunHalted(Exception):
    """The run stopped with an error (zymi's `Err(halt)`); the message is the halt reason."""


class RunResult(msgspec.Struct):
    stream_id: str
    correlation_id: str
    success: bool
    final_output: str | None
    halt: str | None = None


class Runtime(msgspec.Struct, dict=True):
    """Everything a run needs, built once per process (one provider, one store writer)."""

    workspace: Workspace
    recorder: Recorder
    reader: EventReader
    provider: Provider | None
    make_tools: Callable[[], ToolRunner]  # the gate, the shell, the file tools: built at their first use
    sandbox: Sandbox  # where the shell runs; its start-up line is the caller's to say
    knobs: ContextKnobs
    reasoning: ApprovalHandler | None = None  # a terminal that can answer `ask:` steps (None under serve)
    printer: Printer | None = None

    @functools.cached_property
    def tools(self) -> ToolRunner:
        """Built with a run's first step, after its first events (tests/test_engine_startup_modules.py)."""
        return self.make_tools()

    def say(self, text: str) -> None:
        if self.printer is not None:
            self.printer(text)


def _template_args(value: Any, inputs: dict[str, str], outputs: dict[str, str]) -> Any:
    if isinstance(value, str):
        return substitute(value, inputs, outputs)
    if isinstance(value, list):
        return [_template_args(v, inputs, outputs) for v in value]
    if isinstance(value, dict):
        return {k: _template_args(v, inputs, outputs) for k, v in value.items()}
    return value


class ResumeHook(msgspec.Struct, frozen=True):
    """Fork-resume (ADR-0018), bootstrapped by engine/resume.py before the run starts: the stream
    already holds PipelineRequested, ResumeForked, WorkflowStarted and the frozen steps' copies.
    The run is seeded with the frozen steps' outputs, never launches those steps, writes no
    WorkflowStarted of its own and does write PipelineCompleted (zymi's `is_resume`)."""

    frozen_outputs: dict[str, str]


class PipelineRun:
    def __init__(
        self,
        rt: Runtime,
        pipeline: PipelineConfig,
        inputs: dict[str, str],
        correlation_id: str,
        stream_id: str | None,
        resume: ResumeHook | None = None,  # fork-resume only (engine/resume.py)
        requested: bool = False,  # a `run` whose PipelineRequested is written (engine/run_request.py)
    ) -> None:
        self.rt = rt
        self.pipeline = pipeline
        self.local = stream_id is None or requested
        self.requested = requested
        self.resume = resume
        self.inputs = run_inputs(pipeline, inputs)
        self.stream = stream_id or run_stream(pipeline.name)
        self.scope = RunScope(self.stream, correlation_id, fresh=self.local)
        self.outputs: dict[str, str] = dict(resume.frozen_outputs) if resume else {}
        self.running: set[asyncio.Task[StepResult]] = set()
        self.sealed = False

    def say(self, text: str) -> None:
        """zymi prints the plan and the step lines only under `run` (not under serve)."""
        if self.local:
            self.rt.say(text)

    async def emit(self, kind: EventData, source: str = "engine") -> None:
        await self.rt.recorder.emit(self.stream, kind, source, self.scope.correlation_id)

    # -- steps ---------------------------------------------------------------------------------
    async def agent_step(self, step: StepConfig, outputs: dict[str, str]) -> StepResult:
        from zymi_tui.engine.agent import AgentSetup, AgentStep, describe, user_message
        from zymi_tui.engine.tool_catalog import tool_definitions

        ws, rt = self.rt.workspace, self.rt
        agent = ws.agents[step.agent or ""]
        task = substitute(step.task or "", self.inputs, outputs, cut=2000)
        cutoff = time.time_ns() if step.context.mode == "fresh" else None
        setup = AgentSetup(
            agent=agent,
            step=step,
            system_prompt=agent.system_prompt
            if agent.system_prompt is not None
            else f"You are the '{agent.name}' agent.",
            user_message=user_message(task, step, outputs),
            tools=tool_definitions(agent.tools, ws.tools),
            max_iterations=agent.max_iterations
            if agent.max_iterations is not None
            else ws.project.defaults.max_iterations,
            max_tokens=agent.max_tokens if agent.max_tokens is not None else ws.project.defaults.max_tokens,
            knobs=rt.knobs,
            fresh_cutoff_ns=cutoff,
        )
        assert rt.provider is not None
        started = WorkflowNodeStarted(
            node_id=step.id,
            description=f'agent={agent.name}, task="{cut_bytes(task, 80)}"',
            zymi_tui=describe(setup, rt.provider),
        )
        await self.emit(started)
        return await AgentStep(setup, self.scope, rt.provider, rt.recorder, rt.reader, rt.tools).run()

    async def tool_step(self, step: StepConfig, outputs: dict[str, str]) -> StepResult:
        await self.emit(WorkflowNodeStarted(node_id=step.id, description=f"tool={step.tool}"))
        args = json.dumps(
            _template_args(step.args, self.inputs, outputs), sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
        step_stream = f"{self.stream}:step:{step.id}"
        call_id = str(uuid.uuid4())
        rec, corr = self.rt.recorder, self.scope.correlation_id
        await rec.emit(
            step_stream, ToolCallRequested(tool_name=step.tool or "", arguments=args, call_id=call_id), "engine", corr
        )
        t0 = time.monotonic()
        result, is_error = await self.rt.tools.call(self.scope, step.tool or "", args)
        await rec.emit(
            step_stream,
            ToolCallCompleted(
                call_id=call_id,
                result=result,
                result_preview=cut_bytes(result, 200),
                is_error=is_error,
                duration_ms=int((time.monotonic() - t0) * 1000),
                replayed=False,
            ),
            "engine",
            corr,
        )
        await self.emit(WorkflowNodeCompleted(node_id=step.id, success=not is_error))
        return StepResult(result, 1, not is_error)

    async def ask_step(self, step: StepConfig, outputs: dict[str, str]) -> StepResult:
        await self.emit(WorkflowNodeStarted(node_id=step.id, description="ask"))
        prompt = substitute(step.ask or "", self.inputs, outputs, cut=2000)
        handler = self.rt.reasoning
        if handler is None and step.channel is None:
            text = (
                f"[ask failed] step '{step.id}' has no reasoning channel to answer it; set `channel:` on the step, "
                "configure a reasoning channel, or run under `zymi mcp serve` (ADR-0042)"
            )
            await self.emit(WorkflowNodeCompleted(node_id=step.id, success=False))
            return StepResult(text, 1, False)
        request_id = str(uuid.uuid4())
        channel = step.channel or "terminal"
        await self.emit(
            ReasoningRequested(request_id=request_id, stream_id=self.stream, prompt=prompt, channel=channel),
            "orchestrator",
        )
        answer = await asyncio.to_thread(_ask_terminal, prompt)
        ok = answer is not None
        await self.emit(
            ReasoningAnswered(
                request_id=request_id,
                stream_id=self.stream,
                answer=answer if answer is not None else "no answer (stdin closed)",
                answered_by="terminal:terminal",
                is_error=not ok,
            ),
            "reasoning_channel",
        )
        await self.emit(WorkflowNodeCompleted(node_id=step.id, success=ok))
        return StepResult(answer if answer is not None else "[ask failed] no answer (stdin closed)", 1, ok)

    async def launch(self, step: StepConfig, outputs: dict[str, str]) -> StepResult:
        if step.kind == "tool":
            return await self.tool_step(step, outputs)
        if step.kind == "ask":
            return await self.ask_step(step, outputs)
        return await self.agent_step(step, outputs)

    # -- the run -------------------------------------------------------------------------------
    async def run(self) -> RunResult:
        try:
            return await self._run()
        except asyncio.CancelledError:
            await asyncio.shield(self._stop_interrupted())
            raise
        except BaseException:  # a crash of our own code: the run's shell must not outlive it (serve goes on)
            shell, self.scope.shell = self.scope.shell, None
            if shell is not None:
                with contextlib.suppress(Exception):
                    await shell.close()
            raise

    async def _stop_interrupted(self) -> None:
        """Cancel the steps still running and wait for them; then seal the run (under `run` and
        `resume`; `serve` seals its runs itself) and close its shell."""
        for task in self.running:
            task.cancel()
        if self.running:
            await asyncio.wait(self.running)
        if (self.local or self.resume) and not self.sealed:
            await seal_interrupted(self.rt.recorder, self.stream, self.pipeline.name, self.scope.correlation_id)
        await self.rt.tools.close_shell(self.scope)

    async def _run(self) -> RunResult:
        rt, p = self.rt, self.pipeline
        levels = plan_levels(p)
        if self.local and not self.requested:
            await self.emit(PipelineRequested(pipeline=p.name, inputs=self.inputs))
        if self.resume is None:
            await self.emit(WorkflowStarted(user_message=f"pipeline: {p.name}", node_count=len(p.steps)))
        if self.local:
            self.say(f"  Execution plan: {len(p.steps)} steps, {len(levels)} levels\n")
        skipped: list[str] = []
        halt: str | None = None
        success = True
        for n, level in enumerate(levels, 1):
            if self.local:
                self.say(f"  Level {n}{' (parallel)' if len(level) > 1 else ''}: {', '.join(level)}")
            snapshot = dict(self.outputs)
            launched: list[tuple[StepConfig, asyncio.Task[StepResult]]] = []
            for sid in level:
                if self.resume and sid in self.resume.frozen_outputs:
                    continue  # frozen: copied from the parent by engine/resume.py
                step = p.step(sid)
                assert step is not None
                if any(d in skipped for d in step.depends_on):
                    await self.emit(StepSkipped(step_id=sid, reason="ancestor_skipped"))
                    skipped.append(sid)
                    self.say(f"    [{sid}] skipped (ancestor_skipped)")
                    continue
                if step.when is not None:
                    resolved = substitute(step.when, self.inputs, snapshot)
                    try:
                        go = parse_when(resolved).evaluate()
                    except WhenError as e:
                        raise RunHalted(
                            f"step '{sid}' when-expression eval failed after substitution: {e} "
                            f'(resolved: "{resolved}")'
                        ) from None
                    if not go:
                        await self.emit(StepSkipped(step_id=sid, reason="when=false"))
                        skipped.append(sid)
                        self.say(f"    [{sid}] skipped (when=false)")
                        continue
                started = asyncio.ensure_future(self.launch(step, snapshot))
                self.running.add(started)
                started.add_done_callback(self.running.discard)
                launched.append((step, started))
            for step, task in launched:
                try:
                    res = await task
                except StepError as e:
                    await self.emit(WorkflowNodeCompleted(node_id=step.id, success=False))
                    self.say(f"    [{step.id}] FAILED")
                    success = False
                    halt = halt or str(e)
                    continue
                word = "done" if res.success else "FAILED"
                self.say(f"    [{step.id}] {word} ({res.iterations} iterations)")
                if not res.success:
                    success = False
                    if step.kind == "tool" and halt is None:
                        halt = f"deterministic tool step '{step.id}' failed: {res.output}"
                if res.output is not None:
                    self.outputs[step.id] = res.output
            if halt is not None:
                break
        chosen, via, out_error = self._resolve_output(skipped)
        if out_error and halt is None:
            success, halt = False, out_error
        final = self.outputs.get(chosen) if chosen else None
        if final is None and levels:
            final = self.outputs.get(levels[-1][-1])
        await self.emit(WorkflowCompleted(success=success))
        if chosen is not None and via is not None:
            await self.emit(OutputResolved(chosen_step=chosen, via=via))
        if success and final is not None:
            await self.emit(ResponseReady(conversation_id=self.stream, content=final))
        if self.local or self.resume:
            self.sealed = True  # the append commits even if Ctrl-C comes while it runs
            await self.emit(PipelineCompleted(pipeline=p.name, success=success, final_output=final, error=halt))
            await rt.recorder.checkpoint()
        await rt.tools.close_shell(self.scope)
        if halt is not None:
            raise RunHalted(halt)
        return RunResult(self.stream, self.scope.correlation_id, success, final)

    def _resolve_output(self, skipped: list[str]) -> tuple[str | None, OutputVia | None, str | None]:
        out = self.pipeline.output
        if out is None:
            return None, None, None
        if out.step is not None:
            if out.step in skipped:
                return None, None, f"output step '{out.step}' was skipped"
            return out.step, OutputVia(form="step"), None
        ids = out.any_of or []
        prefix: list[str] = []
        for sid in ids:
            if sid not in skipped:
                return sid, OutputVia(form="any_of", skipped=prefix), None
            prefix.append(sid)
        return None, None, f"all any_of outputs were skipped: [{', '.join(ids)}]"


def _ask_terminal(prompt: str) -> str | None:
    sys.stdout.write(f"\n--- reasoning requested -------------------------\n  {prompt}\n  answer> ")
    sys.stdout.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


async def run_pipeline(
    rt: Runtime,
    name: str,
    inputs: dict[str, str],
    *,
    correlation_id: str | None = None,
    stream_id: str | None = None,
    resume: ResumeHook | None = None,
    requested: RequestedRun | None = None,
) -> RunResult:
    """Run one pipeline. `stream_id=None` is a `zymi run`: fresh stream, PipelineRequested/Completed written
    here; `requested`, a `zymi run` whose PipelineRequested `engine/run_request.py` wrote."""
    pipeline = rt.workspace.pipeline(name)
    if requested is not None:
        run = PipelineRun(rt, pipeline, requested.inputs, requested.correlation_id, requested.stream_id, requested=True)
    else:
        run = PipelineRun(rt, pipeline, inputs, correlation_id or str(uuid.uuid4()), stream_id, resume)
    return await run.run()
