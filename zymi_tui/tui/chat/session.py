"""One chat: a project, its chat pipeline, one stream; each turn runs through the engine as `zymi serve` runs it.

A turn is `zymi_tui.engine.chat.send` (UserMessageReceived + PipelineRequested on the chat stream,
the run, PipelineCompleted source zymi-serve). The session adds what a screen needs around it:
listeners for every event written, a provider timeout, profile switching between turns, a
cancelled turn sealed so the store stays consistent, and the last call's context rebuilt.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zymi_tui.context.knobs import ContextKnobs, KnobError
from zymi_tui.engine.approvals import ApprovalHandler
from zymi_tui.engine.chat import PROJECT_PROFILE, chat_pipeline, profile_knobs, send
from zymi_tui.engine.config import PipelineConfig
from zymi_tui.engine.loader import Workspace, load_workspace
from zymi_tui.engine.providers.base import LlmRequest, LlmResponse, Provider, ProviderError
from zymi_tui.engine.run_request import make_provider
from zymi_tui.engine.runner import Runtime
from zymi_tui.engine.runtime import close_runtime, open_runtime
from zymi_tui.errors import UserError
from zymi_tui.events import kinds as k
from zymi_tui.events.kinds import Event
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import STEP_MARK, EventWriter
from zymi_tui.events.stored import StoredEvent
from zymi_tui.project.errors import ProjectError
from zymi_tui.replay.call_context import CallContext, ReplayError
from zymi_tui.replay.store_replay import context_at
from zymi_tui.tui.chat.transcript import CANCELLED

DEFAULT_TIMEOUT_S = 120.0
DEMO_OFFER = "or pass --demo-model to chat with the offline demo model"
_UNSET_ENV = re.compile(r"unresolved template variable `\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}`")

Listener = Callable[[StoredEvent], None]


class ChatSetupError(UserError):
    """The chat cannot start (no project, no chat pipeline, a provider without its key); one line."""

    title = "Chat"


@dataclass(frozen=True)
class ChatOptions:
    project_dir: Path
    stream: str = "term"
    profile: str | None = None  # None: the project's runtime.context
    pipeline: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    demo_model: bool = False  # use the offline demo model whatever the project configures
    store: StoreLocation | None = None  # None: the project's store; else this one (the dashboard's, opened from it)


class TimedProvider:
    """A provider whose every call gives up after `timeout_s` with a clear error (recorded as LlmCallFailed)."""

    def __init__(self, inner: Provider, timeout_s: float) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.timeout_s = timeout_s

    async def complete(self, request: LlmRequest) -> LlmResponse:
        try:
            return await asyncio.wait_for(self.inner.complete(request), self.timeout_s)
        except TimeoutError:
            raise ProviderError(
                f"no answer from {self.name}/{self.model} within {self.timeout_s:g} s (timed out; "
                "`--timeout SECONDS` waits longer)"
            ) from None


class ShieldedWriter:
    """A writer whose appends finish even when the turn awaiting them is cancelled (no half-written turn)."""

    def __init__(self, inner: EventWriter) -> None:
        self.inner = inner

    async def append(self, event: Event) -> StoredEvent:
        return await asyncio.shield(self.inner.append(event))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def load_chat_workspace(root: Path, demo_model: bool) -> Workspace:
    """The project; with the demo model, `${env.X}` left unset (an API key) does not stop the chat."""
    environ: dict[str, str] | None = None
    for _ in range(32):
        try:
            return load_workspace(root, environ)
        except ProjectError as e:
            unset = _UNSET_ENV.search(e.message)
            if unset is None:
                raise ChatSetupError(f"failed to load project: {e.message}", e.hint) from None
            if not demo_model:
                raise ChatSetupError(
                    f"{e.message} — set {unset.group(1)} to use the configured provider, {DEMO_OFFER}"
                ) from None
            environ = {**(os.environ if environ is None else environ), unset.group(1): ""}
    raise ChatSetupError(f"failed to load project in {root}: too many unset environment variables")


class ChatSession:
    """The engine runtime for one chat stream, plus what the chat screen needs around a turn."""

    def __init__(self, ws: Workspace, rt: Runtime, pipeline: PipelineConfig, input_name: str, stream: str) -> None:
        self.ws = ws
        self.rt = rt
        self.pipeline = pipeline
        self.input_name = input_name
        self.stream = stream
        self.project_knobs = rt.knobs
        self.profile = PROJECT_PROFILE
        self.listeners: list[Listener] = []
        self._open_turn: str | None = None  # correlation id of the turn being written
        self._sealed: set[str] = set()
        self._answers: dict[str, str] = {}  # correlation id -> the turn's answer (ResponseReady)
        self._open_calls: dict[str, StoredEvent] = {}  # step stream -> LlmCallStarted without its end
        self._open_tools: dict[str, StoredEvent] = {}  # call id -> ToolCallRequested without its result
        self._open_approvals: dict[str, StoredEvent] = {}  # approval id -> ApprovalRequested without a decision
        self._running: asyncio.Task[object] | None = None
        self._sealing: asyncio.Future[None] | None = None
        self.closed = False
        rt.recorder.listeners.append(self._on_event)

    # -- opening and closing -----------------------------------------------------------------------
    @classmethod
    async def open(cls, options: ChatOptions, approvals: ApprovalHandler | None) -> ChatSession:
        ws = load_chat_workspace(options.project_dir, options.demo_model)
        ws.store_at = options.store
        pipeline, input_name = chat_pipeline(ws, options.pipeline)
        provider: Provider | None
        if options.demo_model:
            from zymi_tui.engine.providers.demo import DemoProvider

            provider = DemoProvider()
        else:
            try:
                provider = make_provider(ws, True)
            except UserError as e:
                raise ChatSetupError(f"{e.message} — {DEMO_OFFER}") from None
        assert provider is not None
        rt = await open_runtime(ws, [pipeline.name], approvals, provider=TimedProvider(provider, options.timeout_s))
        rt.recorder.writer = ShieldedWriter(rt.recorder.writer)
        session = cls(ws, rt, pipeline, input_name, options.stream)
        if options.profile is not None:
            try:
                session.set_profile(options.profile)
            except KnobError:
                await session.close()
                raise
        return session

    async def close(self) -> None:
        """Cancel a running turn (it seals itself), then close the store (once)."""
        if self.closed:
            return
        self.closed = True
        running = self._running
        if running is not None and not running.done() and running is not asyncio.current_task():
            running.cancel()
            await asyncio.wait([running])
        if self._sealing is not None:
            await asyncio.wait([self._sealing])
        await close_runtime(self.rt)

    # -- what the screen shows ---------------------------------------------------------------------
    @property
    def model_label(self) -> str:
        p = self.rt.provider
        return "no model" if p is None else f"{p.name}/{p.model}"

    @property
    def is_demo(self) -> bool:
        return self.rt.provider is not None and self.rt.provider.name == "demo"

    @property
    def knobs(self) -> ContextKnobs:
        return self.rt.knobs

    def knobs_of(self, profile: str) -> ContextKnobs:
        return profile_knobs(self.project_knobs, profile)

    def set_profile(self, profile: str) -> ContextKnobs:
        """The knobs of the next turn's calls (raises KnobError for an unknown profile)."""
        self.rt.knobs = self.knobs_of(profile)
        self.profile = profile
        return self.rt.knobs

    async def history(self) -> list[StoredEvent]:
        """Every event of this chat so far: its stream and step streams, in store order."""
        events = await self.rt.reader.read_stream(self.stream, include_steps=True)
        return sorted(events, key=lambda se: se.global_id)

    async def last_call(self) -> StoredEvent | None:
        """The newest agent LlmCallStarted of this chat (iteration > 0)."""
        for se in reversed(await self.history()):
            d = se.event.kind
            if isinstance(d, k.LlmCallStarted) and d.iteration > 0:
                return se
        return None

    async def context_of(self, call: StoredEvent, knobs: ContextKnobs | None = None) -> CallContext | None:
        """That call's context rebuilt by the context engine (knobs None: as recorded)."""
        try:
            return await context_at(
                self.rt.reader, call.event.stream_id, call.event.sequence, project=self.ws.root, knobs=knobs
            )
        except ReplayError:
            return None

    # -- turns -------------------------------------------------------------------------------------
    def _on_event(self, se: StoredEvent) -> None:
        ev = se.event
        if ev.stream_id.split(STEP_MARK, 1)[0] != self.stream:
            return
        d = ev.kind
        if isinstance(d, k.UserMessageReceived) and STEP_MARK not in ev.stream_id:
            self._open_turn = ev.correlation_id
        elif isinstance(d, k.ResponseReady) and ev.correlation_id:
            self._answers[ev.correlation_id] = d.content
        elif isinstance(d, k.PipelineCompleted) and ev.correlation_id:
            self._sealed.add(ev.correlation_id)
        elif isinstance(d, k.LlmCallStarted):
            self._open_calls[ev.stream_id] = se
        elif isinstance(d, (k.LlmCallCompleted, k.LlmCallFailed)):
            self._open_calls.pop(ev.stream_id, None)
        elif isinstance(d, k.ToolCallRequested):
            self._open_tools[d.call_id] = se
        elif isinstance(d, k.ToolCallCompleted):
            self._open_tools.pop(d.call_id, None)
        elif isinstance(d, k.ApprovalRequested):
            self._open_approvals[d.approval_id] = se
        elif isinstance(d, (k.ApprovalGranted, k.ApprovalDenied)):
            self._open_approvals.pop(d.approval_id, None)
        for listener in list(self.listeners):
            listener(se)

    async def send(self, text: str) -> tuple[bool, str]:
        """One turn, to its end: (success, answer or error). Cancelling it seals the turn (`seal_cancelled`)."""
        self._open_calls.clear()
        self._open_tools.clear()
        self._open_approvals.clear()
        self._running = asyncio.current_task()
        try:
            return await send(self.rt, self.pipeline, self.input_name, self.stream, text)
        except asyncio.CancelledError:
            self._sealing = asyncio.ensure_future(self.seal_cancelled())
            while not self._sealing.done():  # a second cancel (app exit) must not cut the seal short
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(self._sealing)
            raise

    @property
    def answered(self) -> bool:
        """The running turn has its answer (ResponseReady): what is left is closing it, nothing to cancel."""
        corr = self._open_turn
        return corr is not None and corr not in self._sealed and corr in self._answers

    async def seal_cancelled(self) -> None:
        """Close a cancelled turn as zymi closes a failed one: what was open fails, PipelineCompleted says why.

        A pending approval is denied by the orchestrator (as zymi records a timeout); an open tool call
        gets an error result, so the next turn's context has no tool call without its answer (a real
        provider rejects that).
        """
        corr = self._open_turn
        if corr is None or corr in self._sealed:
            return
        rec = self.rt.recorder
        if corr in self._answers:  # cancelled (the app quitting) after its answer: a finished turn stays finished
            done = k.PipelineCompleted(pipeline=self.pipeline.name, success=True, final_output=self._answers[corr])
            await rec.emit(self.stream, done, "zymi-serve", corr)
            await rec.checkpoint()
            return
        now = time.time_ns()
        for approval_id, asked in list(self._open_approvals.items()):
            denied = k.ApprovalDenied(
                approval_id=approval_id, stream_id=self.stream, decided_by="orchestrator", reason=CANCELLED
            )
            await rec.emit(asked.event.stream_id, denied, "orchestrator", asked.event.correlation_id)
        self._open_approvals.clear()
        for call_id, requested in list(self._open_tools.items()):
            elapsed = max(0, (now - requested.event.timestamp_ns) // 1_000_000)
            result = f"[tool error] {CANCELLED}"
            done_tool = k.ToolCallCompleted(
                call_id=call_id,
                result=result,
                result_preview=result,
                is_error=True,
                duration_ms=elapsed,
                replayed=False,
            )
            await rec.emit(requested.event.stream_id, done_tool, "engine", requested.event.correlation_id)
        self._open_tools.clear()
        for stream, started in list(self._open_calls.items()):
            d = started.event.kind
            assert isinstance(d, k.LlmCallStarted)
            elapsed = max(0, (now - started.event.timestamp_ns) // 1_000_000)
            failed = k.LlmCallFailed(iteration=d.iteration, error=CANCELLED, elapsed_ms=elapsed)
            await rec.emit(stream, failed, started.event.source, started.event.correlation_id)
        self._open_calls.clear()
        done = k.PipelineCompleted(pipeline=self.pipeline.name, success=False, final_output=None, error=CANCELLED)
        await rec.emit(self.stream, done, "zymi-serve", corr)
        await rec.checkpoint()
