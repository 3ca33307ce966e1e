"""What a `run` does before the engine loads (asyncio, the runner, the agent and the tools): the
provider made (its configuration errors said first, as zymi says them), the store opened, and the run's
first event, `PipelineRequested`, appended. Run synchronously, before any event loop, so the first event
comes as soon as the project is read (benchmarks/bench_engine.py, "start to 1st event")."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

from zymi_tui.engine.config import PipelineConfig, ShellImpl
from zymi_tui.engine.loader import Workspace
from zymi_tui.engine.providers import ProviderConfigError, build_provider
from zymi_tui.engine.providers.base import Provider
from zymi_tui.events.kinds import Event, PipelineRequested
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.sqlite_append import append_rows, open_for_writing
from zymi_tui.project.errors import ProjectError
from zymi_tui.project.reader import PROJECT_FILE


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


def run_inputs(pipeline: PipelineConfig, inputs: dict[str, str]) -> dict[str, str]:
    """A run's inputs as zymi records them: the ones given, and each optional one not given as ""."""
    out = dict(inputs)
    for spec in pipeline.inputs:
        if not spec.required and spec.name not in out:
            out[spec.name] = ""
    return out


def run_stream(pipeline: str) -> str:
    """The stream of a new run of the pipeline named `pipeline`, named as zymi names it."""
    return f"pipeline-{pipeline}-{uuid.uuid4()}"


class RequestedRun:
    """A `run` whose `PipelineRequested` is in the store: its stream, correlation id and inputs, the
    provider made for it, and the store's open connection (the engine's writer takes it over)."""

    __slots__ = ("connection", "correlation_id", "inputs", "path", "provider", "stream_id")

    def __init__(
        self,
        stream_id: str,
        correlation_id: str,
        inputs: dict[str, str],
        provider: Provider | None,
        path: Path,
        connection: sqlite3.Connection,
    ) -> None:
        self.stream_id, self.correlation_id, self.inputs = stream_id, correlation_id, inputs
        self.provider, self.path, self.connection = provider, path, connection


def request_run(ws: Workspace, pipeline: PipelineConfig, inputs: dict[str, str]) -> RequestedRun | None:
    """A `run`'s provider made and its `PipelineRequested` appended, without an event loop; None for a
    store that is not a SQLite file (Postgres: the engine opens it and writes the event itself)."""
    store = ws.store
    if not isinstance(store, SqliteStore):
        return None
    provider = make_provider(ws, needs_llm(ws, [pipeline.name]))
    path = store.path.expanduser()
    connection = open_for_writing(path)
    try:
        requested = RequestedRun(
            run_stream(pipeline.name), str(uuid.uuid4()), run_inputs(pipeline, inputs), provider, path, connection
        )
        kind = PipelineRequested(pipeline=pipeline.name, inputs=requested.inputs)
        event = Event.new(requested.stream_id, kind, "engine", requested.correlation_id)
        append_rows(connection, str(path), [(event, event.to_json())], wait=True)
    except BaseException:
        connection.close()
        raise
    return requested
