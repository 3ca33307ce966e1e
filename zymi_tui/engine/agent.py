"""The agent step (docs/engine.md#agent-step): zymi's ReAct loop, with the one ContextBuilder building every call.

The step stream `<run>:step:<id>` is read once when the step starts (earlier runs of a chat
stream carry over, docs/engine.md#chat-history) and every event the step writes there is fed to the builder as it is
written, so each iteration costs the same however long the history is.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import msgspec

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.engine.bash_parser import preload as preload_bashlex
from zymi_tui.engine.config import AgentConfig, StepConfig
from zymi_tui.engine.providers.base import LlmRequest, LlmResponse, Provider, ProviderError
from zymi_tui.engine.recorder import Recorder
from zymi_tui.engine.run_scope import RunScope, StepError, StepResult
from zymi_tui.engine.templating import cut_bytes
from zymi_tui.engine.tools import ToolRunner
from zymi_tui.events.kinds import (
    ContextCompacted,
    EventData,
    LlmCallCompleted,
    LlmCallFailed,
    LlmCallStarted,
    ToolCallCompleted,
    ToolCallRequested,
    WorkflowNodeCompleted,
)
from zymi_tui.events.messages import AssistantMessage, message_text, to_wire
from zymi_tui.events.store import EventReader
from zymi_tui.events.stored import StoredEvent

if TYPE_CHECKING:
    from zymi_tui.context.rendered import RenderedContext


class AgentSetup(msgspec.Struct, frozen=True):
    agent: AgentConfig
    step: StepConfig
    system_prompt: str
    user_message: str
    tools: list[dict[str, Any]]
    max_iterations: int
    max_tokens: int
    knobs: ContextKnobs
    fresh_cutoff_ns: int | None


def user_message(task: str, step: StepConfig, outputs: dict[str, str]) -> str:
    """The task plus the full outputs of the step's dependencies (docs/engine.md#agent-step)."""
    deps = [d for d in step.depends_on if d in outputs]
    if not deps:
        return task
    text = task + "\n\n---\nContext from previous steps:\n"
    for dep in deps:
        text += f"## Output from step '{dep}':\n{outputs[dep]}\n\n"
    return text


def describe(setup: AgentSetup, provider: Provider) -> dict[str, Any]:
    """The `zymi_tui` extra field of an agent step's WorkflowNodeStarted: what replay needs without a project."""
    return {
        "agent": setup.agent.name,
        "system_prompt": setup.system_prompt,
        "task": setup.user_message,
        "context_mode": setup.step.context.mode,
        "fresh_cutoff_ns": setup.fresh_cutoff_ns,
        "knobs": setup.knobs.values(),
        "provider": provider.name,
        "model": provider.model,
        "max_tokens": setup.max_tokens,
        "max_iterations": setup.max_iterations,
        "tools": [t["name"] for t in setup.tools],
    }


class AgentStep:
    def __init__(
        self,
        setup: AgentSetup,
        scope: RunScope,
        provider: Provider,
        recorder: Recorder,
        reader: EventReader,
        tools: ToolRunner,
    ) -> None:
        self.setup = setup
        self.scope = scope
        self.provider = provider
        self.recorder = recorder
        self.reader = reader
        self.tools = tools
        self.stream = f"{scope.stream_id}:step:{setup.step.id}"
        # the context builder's modules load with the first step, after the run's first events are written
        from zymi_tui.context.builder import ContextBuilder
        from zymi_tui.context.rendered import Prefix
        from zymi_tui.events.replay_view import replay_event

        self._replay = replay_event
        self.builder = ContextBuilder(
            setup.knobs, Prefix(setup.system_prompt, setup.user_message), fresh_cutoff_ns=setup.fresh_cutoff_ns
        )

    async def _emit(self, kind: EventData, source: str = "engine", corr: str | None = None) -> StoredEvent:
        stored = await self.recorder.emit(self.stream, kind, source, corr or self.scope.correlation_id)
        self.builder.add(self._replay(stored))
        return stored

    def _label(self) -> dict[str, Any]:
        """What an event that carries a model's words records (`zymi_tui`): which provider spoke (the demo
        model is labelled)."""
        return {"provider": self.provider.name, "model": self.provider.model}

    async def _compact(self, ctx: RenderedContext) -> RenderedContext:
        plan = ctx.compaction
        assert plan is not None
        corr = str(uuid.uuid4())
        wire = [to_wire(m) for m in plan.request_messages]
        chars = sum(len(message_text(m).encode("utf-8")) for m in plan.request_messages)
        await self._emit(
            LlmCallStarted(iteration=0, message_count=len(wire), approx_context_chars=chars), "compaction", corr
        )
        try:
            resp = await self.provider.complete(LlmRequest(wire, [], 0.3, 1024))
        except ProviderError:
            return ctx  # zymi ignores a failed compaction call
        summary = resp.content or ""
        message = AssistantMessage(content=resp.content, tool_calls=tuple(resp.tool_calls))
        await self._emit(
            LlmCallCompleted(
                response_message=message,
                has_tool_calls=False,
                usage=resp.usage,
                content_preview=cut_bytes(summary, 100),
                zymi_tui=self._label(),
            ),
            "compaction",
            corr,
        )
        await self._emit(
            ContextCompacted(
                replaces_seq_range=plan.replaces_seq_range,
                summary=summary,
                bytes_saved=plan.span_bytes - len(summary.encode("utf-8")),
            ),
            "compaction",
            corr,
        )
        return self.builder.build(self._memory(), allow_compaction=False, apply_fresh=False)

    def _memory(self) -> list[tuple[str, str]]:
        return list(self.scope.memory.items())

    async def run(self) -> StepResult:
        setup, step_id = self.setup, self.setup.step.id
        if not self.scope.fresh:  # a chat's or a served stream's earlier runs (docs/engine.md#chat-history)
            for stored in await self.reader.read_stream(self.stream):
                self.builder.add(self._replay(stored))
        iteration = 0
        while True:
            iteration += 1
            if iteration > setup.max_iterations:
                text = f"[max iterations ({setup.max_iterations}) reached without final answer]"
                return StepResult(text, iteration - 1, False)
            ctx = self.builder.build(self._memory())
            if ctx.compaction is not None:
                ctx = await self._compact(ctx)
            if ctx.hard_cap_exceeded:
                raise StepError(
                    f"[{step_id}] context build failed: context exceeds hard cap: "
                    f"{ctx.chars} chars > {setup.knobs.hard_cap_chars} hard cap"
                )
            await self._emit(
                LlmCallStarted(iteration=iteration, message_count=ctx.message_count, approx_context_chars=ctx.chars)
            )
            started = time.monotonic()
            if iteration == 1 and any(t["name"] == "execute_shell_command" for t in setup.tools):
                preload_bashlex()  # its first command's policy check needs it: loaded while the model thinks
            try:
                resp = await self.provider.complete(LlmRequest(ctx.wire(), setup.tools, 0.7, setup.max_tokens))
            except ProviderError as e:
                elapsed = int((time.monotonic() - started) * 1000)
                await self._emit(LlmCallFailed(iteration=iteration, error=str(e), elapsed_ms=elapsed))
                raise StepError(f"[{step_id}] LLM call failed: {e}") from None
            await self._completed(resp)
            if resp.finish_reason == "length":
                raise StepError(
                    f"[{step_id}] the model's answer hit max_tokens ({setup.max_tokens}) and is cut off "
                    "(finish_reason=length; reasoning tokens count toward it). Raise `max_tokens` in "
                    f"agents/{setup.agent.name}.yml or `defaults.max_tokens` in project.yml"
                )
            if not resp.tool_calls:
                await self.recorder.emit(
                    self.scope.stream_id,
                    WorkflowNodeCompleted(node_id=step_id, success=True),
                    "engine",
                    self.scope.correlation_id,
                )
                return StepResult(resp.content or "", iteration, True)
            for call in resp.tool_calls:
                await self._emit(ToolCallRequested(tool_name=call.name, arguments=call.arguments, call_id=call.id))
                t0 = time.monotonic()
                result, is_error = await self.tools.call(self.scope, call.name, call.arguments)
                await self._emit(
                    ToolCallCompleted(
                        call_id=call.id,
                        result=result,
                        result_preview=cut_bytes(result, 200),
                        is_error=is_error,
                        duration_ms=int((time.monotonic() - t0) * 1000),
                        replayed=False,
                    )
                )

    async def _completed(self, resp: LlmResponse) -> None:
        completed = LlmCallCompleted(
            response_message=AssistantMessage(content=resp.content, tool_calls=tuple(resp.tool_calls)),
            has_tool_calls=bool(resp.tool_calls),
            usage=resp.usage,
            content_preview=None if resp.content is None else cut_bytes(resp.content, 100),
            finish_reason=resp.finish_reason,
            zymi_tui=self._label(),
        )
        await self._emit(completed)
