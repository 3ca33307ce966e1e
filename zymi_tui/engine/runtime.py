"""Build a `Runtime` for a project folder: load, open the store, pick the provider, wire the tools."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from zymi_tui.context.knobs import ContextKnobs, section_knobs
from zymi_tui.engine.approvals import ApprovalHandler
from zymi_tui.engine.config import ShellImpl, ShellRuntime
from zymi_tui.engine.loader import Workspace
from zymi_tui.engine.places import Places
from zymi_tui.engine.providers import ProviderConfigError, build_provider
from zymi_tui.engine.providers.base import Provider
from zymi_tui.engine.recorder import Recorder
from zymi_tui.engine.runner import Printer, Runtime
from zymi_tui.engine.sandbox import Sandbox, make_sandbox
from zymi_tui.events.factory import open_reader, open_writer
from zymi_tui.events.location import SqliteStore
from zymi_tui.project.errors import ProjectError
from zymi_tui.project.reader import PROJECT_FILE

if TYPE_CHECKING:  # the gate and the tools load with a run's first step, after its first events
    from zymi_tui.engine.policy import Contracts
    from zymi_tui.engine.tools import ToolRunner


def workspace_knobs(ws: Workspace) -> ContextKnobs:
    """`runtime.context:` of the loaded project.yml (engine defaults when absent; unknown keys ignored)."""
    return section_knobs(ws.project.runtime.context if ws.project.runtime else None, ws.root / PROJECT_FILE)


def _shell(ws: Workspace) -> ShellRuntime:
    return ws.project.runtime.shell if ws.project.runtime else ShellRuntime()


def _store_file(ws: Workspace) -> Path | None:
    return ws.store.path if isinstance(ws.store, SqliteStore) else None


def project_contracts(ws: Workspace) -> Contracts:
    """The gate of a project's tool calls: its policy and file contracts, its store protected."""
    from zymi_tui.engine.policy import Contracts

    return Contracts(ws.project.policy, ws.project.contracts.file_write, ws.root, _store_file(ws))


def _sandbox(ws: Workspace, pipelines: list[str]) -> Sandbox:
    """bubblewrap for the shell when a step can run one (its probe runs a process: ~18 ms)."""
    if not uses_shell(ws, pipelines):
        return Sandbox((), "")
    file_write = ws.project.contracts.file_write
    places = Places.of_contract(ws.root, file_write, _store_file(ws))
    return make_sandbox(ws.root, file_write.allowed_dirs, _shell(ws), places.protected)


def _tool_runner(ws: Workspace, recorder: Recorder, approvals: ApprovalHandler | None, sandbox: Sandbox) -> ToolRunner:
    from zymi_tui.engine.tools import ToolRunner

    return ToolRunner(ws.root, project_contracts(ws), ws.tools, recorder, approvals, _shell(ws), sandbox)


def uses_shell(ws: Workspace, pipelines: list[str]) -> bool:
    """Whether a step of these pipelines can run a shell command (an agent's built-in, or a shell tool)."""
    for name in pipelines:
        for step in ws.pipelines[name].steps:
            agent = ws.agents.get(step.agent or "") if step.kind == "agent" else None
            tools = agent.tools if agent is not None else [step.tool or ""]
            for tool in tools:
                declared = ws.tools.get(tool)
                if tool == "execute_shell_command":
                    return True
                if declared is not None and isinstance(declared.implementation, ShellImpl):
                    return True
    return False


def needs_llm(ws: Workspace, pipelines: list[str]) -> bool:
    return any(s.kind == "agent" for name in pipelines for s in ws.pipelines[name].steps)


def make_provider(ws: Workspace, required: bool) -> Provider | None:
    llm = ws.project.llm
    if llm is None:
        if required:
            raise ProjectError(
                "no 'llm' section in project.yml — a pipeline has an agent step; configure a provider to run it "
                "(or `llm: {provider: demo}` for zymi-tui's offline demo model)"
            )
        return None
    if isinstance(llm, str) or (isinstance(llm, dict) and "use" in llm):
        raise ProjectError("cannot resolve `llm:` in project.yml: named providers are not supported by zymi-tui")
    assert ws.llm is not None  # an inline mapping, the only `llm:` left, read by the loader
    try:
        return build_provider(ws.llm)
    except ProviderConfigError as e:  # zymi's words, and where the setting is
        raise ProviderConfigError(f"{ws.root / PROJECT_FILE}: {e.message}") from None


async def open_runtime(
    ws: Workspace,
    pipelines: list[str],
    approvals: ApprovalHandler | None,
    *,
    printer: Printer | None = None,
    reasoning: ApprovalHandler | None = None,
    provider: Provider | None = None,
) -> Runtime:
    knobs = workspace_knobs(ws)
    if provider is None:
        provider = make_provider(ws, needs_llm(ws, pipelines))
    probing = asyncio.ensure_future(asyncio.to_thread(_sandbox, ws, pipelines))  # while the store opens
    async with contextlib.AsyncExitStack() as undo:  # what is open is closed again if a later part fails
        undo.callback(probing.cancel)
        writer = await open_writer(ws.store)
        undo.push_async_callback(writer.close)
        reader = await open_reader(ws.store)
        undo.push_async_callback(reader.close)
        sandbox = await probing  # its start-up line is the caller's to say (`rt.sandbox.line`)
        undo.pop_all()
    recorder = Recorder(writer)

    def tools() -> ToolRunner:
        return _tool_runner(ws, recorder, approvals, sandbox)

    return Runtime(ws, recorder, reader, provider, tools, sandbox, knobs, reasoning=reasoning, printer=printer)


async def close_runtime(rt: Runtime) -> None:
    await rt.reader.close()
    await rt.recorder.writer.close()
