"""`chat`: a line-based terminal chat with a project's chat pipeline, on one stream, as `zymi serve` would run it.

Each line is published as the stdin connector publishes it (`UserMessageReceived` + `PipelineRequested`
on the chat stream), run to the end, and sealed with `PipelineCompleted` (source `zymi-serve`), so
history carries across messages (docs/engine.md#chat-history) and the store reads as a served chat.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from zymi_tui.context.knobs import PROFILES, ContextKnobs, KnobError, all_profiles, resolve_knobs
from zymi_tui.engine.config import PipelineConfig
from zymi_tui.engine.connectors import publish_message
from zymi_tui.engine.loader import Workspace
from zymi_tui.engine.runner import RunHalted, Runtime, run_pipeline
from zymi_tui.engine.slash import Slash, parse_slash
from zymi_tui.events.kinds import PipelineCompleted
from zymi_tui.project.errors import ProjectError

CONNECTOR = "chat"
DEFAULT_PIPELINE = "chat"
PROJECT_PROFILE = "project"  # the knobs of the project's runtime.context


def profile_names() -> list[str]:
    """The profiles a chat can switch between: the project's own knobs, then the built-in and user ones."""
    try:
        names = all_profiles()
    except KnobError:  # a broken profiles.yml: the built-in ones still work (the error shows on --profile)
        names = dict(PROFILES)
    return [PROJECT_PROFILE, *sorted(names)]


def next_profile(current: str) -> str:
    names = profile_names()
    return names[(names.index(current) + 1) % len(names)] if current in names else names[0]


def profile_knobs(project_knobs: ContextKnobs, profile: str) -> ContextKnobs:
    """The knobs of a profile (raises KnobError for an unknown one); `project`: the project's own."""
    return project_knobs if profile == PROJECT_PROFILE else resolve_knobs(project_knobs, profile, [])


def chat_pipeline(ws: Workspace, name: str | None) -> tuple[PipelineConfig, str]:
    """The pipeline to chat with (`chat`, or the only one) and the input that takes the message."""
    if name is None:
        only = next(iter(ws.pipelines)) if len(ws.pipelines) == 1 else None
        name = DEFAULT_PIPELINE if DEFAULT_PIPELINE in ws.pipelines else only
    if name is None:
        available = ", ".join(sorted(ws.pipelines)) or "(none)"
        raise ProjectError(f"no `chat` pipeline in this project: pass --pipeline NAME (available: {available})")
    pipeline = ws.pipeline(name)
    required = [i.name for i in pipeline.inputs if i.required] or [i.name for i in pipeline.inputs] or ["message"]
    return pipeline, required[0]


def pipeline_notice(requested: str | None, chosen: PipelineConfig) -> str | None:
    """One line when the chat runs another pipeline than the default without being asked to."""
    if requested is not None or chosen.name == DEFAULT_PIPELINE:
        return None
    return (
        f"no `{DEFAULT_PIPELINE}` pipeline in this project: chatting with `{chosen.name}`, its only pipeline "
        "(--pipeline NAME chooses another)"
    )


async def send(rt: Runtime, pipeline: PipelineConfig, input_name: str, stream: str, text: str) -> tuple[bool, str]:
    """One chat turn: (success, answer or error)."""
    corr = await publish_message(
        rt.recorder, name=CONNECTOR, stream_id=stream, text=text, pipeline=pipeline.name, pipeline_input=input_name
    )
    try:
        result = await run_pipeline(rt, pipeline.name, {input_name: text}, correlation_id=corr, stream_id=stream)
        done = PipelineCompleted(
            pipeline=pipeline.name, success=result.success, final_output=result.final_output, error=None
        )
        reply = (True, result.final_output or "") if result.success else (False, result.final_output or "")
    except RunHalted as e:
        done = PipelineCompleted(pipeline=pipeline.name, success=False, final_output=None, error=str(e))
        reply = (False, str(e))
    await rt.recorder.emit(stream, done, "zymi-serve", corr)
    await rt.recorder.checkpoint()
    return reply


async def chat_loop(
    rt: Runtime,
    pipeline: PipelineConfig,
    input_name: str,
    stream: str,
    read_line: Callable[[], Awaitable[str | None]],
    say: Callable[[str], None],
    command: Callable[[Slash], Awaitable[bool]],
) -> None:
    """Messages go to the pipeline, one turn each; slash commands go to `command` (False: leave the chat)."""
    while True:
        line = await read_line()
        if line is None:
            return
        text = line.strip()
        if not text:
            continue
        if (slash := parse_slash(text)) is not None:
            if not await command(slash):
                return
            continue
        ok, answer = await send(rt, pipeline, input_name, stream, text)
        say(("bot> " if ok else "error: ") + answer)
