"""Build a `Runtime` for a project folder: load, open the store, pick the provider, wire the tools."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from zymi_tui.context.knobs import ContextKnobs, section_knobs
from zymi_tui.engine.approvals import ApprovalHandler
from zymi_tui.engine.config import ShellRuntime
from zymi_tui.engine.lazy_reader import LazyReader
from zymi_tui.engine.loader import Workspace
from zymi_tui.engine.places import Places
from zymi_tui.engine.providers.base import Provider
from zymi_tui.engine.recorder import Recorder
from zymi_tui.engine.run_request import RequestedRun, make_provider, needs_llm, uses_shell
from zymi_tui.engine.runner import Printer, Runtime
from zymi_tui.engine.sandbox import Sandbox, make_sandbox
from zymi_tui.events.factory import open_reader, open_writer
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.store import EventReader, EventWriter
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


async def open_runtime(
    ws: Workspace,
    pipelines: list[str],
    approvals: ApprovalHandler | None,
    *,
    printer: Printer | None = None,
    reasoning: ApprovalHandler | None = None,
    provider: Provider | None = None,
    requested: RequestedRun | None = None,
) -> Runtime:
    """`requested`: a `run` whose first event is written (engine/run_request.py): its provider, and its
    store's connection, which the writer takes over."""
    knobs = workspace_knobs(ws)
    if requested is not None:
        provider = requested.provider
    elif provider is None:
        provider = make_provider(ws, needs_llm(ws, pipelines))
    probing = asyncio.ensure_future(asyncio.to_thread(_sandbox, ws, pipelines))  # while the store opens
    async with contextlib.AsyncExitStack() as undo:  # what is open is closed again if a later part fails
        undo.callback(probing.cancel)
        writer: EventWriter
        if requested is not None:
            from zymi_tui.events.sqlite_write import SqliteWriter

            writer = SqliteWriter.adopt(requested.path, requested.connection)
        else:
            writer = await open_writer(ws.store)
        undo.push_async_callback(writer.close)
        reader: EventReader
        if requested is not None:  # a fresh stream, never read back (engine/agent.py): opened if ever read
            reader = LazyReader(ws.store, writer.label)
        else:
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
