"""Build a `Runtime` for a project folder: load, open the store, pick the provider, wire the tools."""

from __future__ import annotations

from pydantic import ValidationError

from zymi_tui.context.knobs import KNOB_NAMES, ContextKnobs, KnobError, make_knobs
from zymi_tui.engine.approvals import ApprovalHandler
from zymi_tui.engine.config import LlmConfig, ShellRuntime
from zymi_tui.engine.loader import ProjectError, Workspace
from zymi_tui.engine.policy import Contracts
from zymi_tui.engine.providers import ProviderConfigError, build_provider
from zymi_tui.engine.providers.base import Provider
from zymi_tui.engine.recorder import Recorder
from zymi_tui.engine.runner import Printer, Runtime
from zymi_tui.engine.tools import ToolRunner
from zymi_tui.events.store import StoreError, open_reader, open_writer


def project_knobs(ws: Workspace) -> ContextKnobs:
    """`runtime.context:` of the loaded project.yml (engine defaults when absent; unknown keys ignored)."""
    section = (ws.project.runtime.context if ws.project.runtime else None) or {}
    try:
        return make_knobs(
            {k: v for k, v in section.items() if k in KNOB_NAMES}, f"{ws.root / 'project.yml'} runtime.context"
        )
    except KnobError as e:
        raise ProjectError(str(e)) from None


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
    try:
        config = llm if isinstance(llm, LlmConfig) else LlmConfig.model_validate(llm)
        return build_provider(config)
    except (ProviderConfigError, ValidationError) as e:
        raise ProjectError(str(e).splitlines()[0]) from None


async def open_runtime(
    ws: Workspace,
    pipelines: list[str],
    approvals: ApprovalHandler | None,
    *,
    printer: Printer | None = None,
    reasoning: ApprovalHandler | None = None,
    provider: Provider | None = None,
) -> Runtime:
    knobs = project_knobs(ws)
    if provider is None:
        provider = make_provider(ws, needs_llm(ws, pipelines))
    store = ws.store_location
    try:
        writer = await open_writer(store)
        try:
            reader = await open_reader(store)
        except BaseException:
            await writer.close()
            raise
    except StoreError as e:
        raise ProjectError(str(e)) from None
    recorder = Recorder(writer)
    shell = ws.project.runtime.shell if ws.project.runtime else ShellRuntime()
    tools = ToolRunner(
        ws.root,
        Contracts(ws.project.policy, ws.project.contracts.file_write, ws.root),
        ws.tools,
        recorder,
        approvals,
        shell,
    )
    return Runtime(ws, recorder, reader, provider, tools, knobs, reasoning=reasoning, printer=printer)


async def close_runtime(rt: Runtime) -> None:
    await rt.reader.close()
    await rt.recorder.writer.close()
