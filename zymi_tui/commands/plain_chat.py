"""`chat --plain` (and `chat` off a terminal): the line-based chat on the agent engine, with the same
slash commands as the chat screen. Its own module, so that `run` and `serve` do not load the chat's."""

from __future__ import annotations

import argparse
import asyncio
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path

from zymi_tui.commands.common import EXIT_INTERRUPTED, EXIT_OK, quiet_child_watcher, run_async
from zymi_tui.commands.workspace import load_project, say
from zymi_tui.context.knobs import KnobError
from zymi_tui.engine.approvals import TerminalApproval
from zymi_tui.engine.chat import (
    PROJECT_PROFILE,
    chat_loop,
    chat_pipeline,
    next_profile,
    pipeline_notice,
    profile_knobs,
    profile_names,
)
from zymi_tui.engine.runner import Runtime
from zymi_tui.engine.runtime import close_runtime, open_runtime
from zymi_tui.engine.slash import Slash, help_text, unknown_command
from zymi_tui.events.kinds import LlmCallStarted


async def last_call_summary(rt: Runtime, stream: str, root: Path) -> str:
    """`/context` in the line-based chat: the last LLM call's context, layer by layer (as the model got it)."""
    from zymi_tui.replay.call_context import ReplayError  # only when asked: `run` starts without it
    from zymi_tui.replay.store_replay import context_at

    events = await rt.reader.read_stream(stream, include_steps=True)
    call = next(
        (se for se in reversed(events) if isinstance(d := se.event.kind, LlmCallStarted) and d.iteration > 0), None
    )
    if call is None:
        return "no LLM call yet: send a message first"
    step_stream, seq = call.event.stream_id, call.event.sequence
    try:
        rendered = (await context_at(rt.reader, step_stream, seq, project=root)).rendered
    except ReplayError as e:
        return f"the last call's context cannot be rebuilt: {e.one_line()}"
    if rendered is None:
        return "the last call's context cannot be rebuilt (no project prefix)"
    layers = " · ".join(f"layer {name} {size:,} B" for name, size in sorted(rendered.layer_bytes.items()))
    return (
        f"last call ({step_stream} seq {seq}): {rendered.chars:,} bytes in {rendered.message_count} messages"
        f" ({layers})\n  every message: zymi-tui context -d {shlex.quote(str(root))} "
        f"--step-stream {shlex.quote(step_stream)} --seq {seq}"
    )


def plain_commands(rt: Runtime, root: Path, stream: str) -> Callable[[Slash], Awaitable[bool]]:
    """What the line-based chat does with a slash command (the full chat screen does the same)."""
    project_knobs = rt.knobs
    profile = PROJECT_PROFILE

    async def command(slash: Slash) -> bool:
        nonlocal profile
        if slash.command == "quit":
            return False
        if slash.command == "help":
            say(help_text(profile_names()))
        elif slash.command == "profile":
            name = slash.arg or next_profile(profile)
            if name not in profile_names():
                say(f"unknown profile {name!r}; profiles: {', '.join(profile_names())}")
                return True
            rt.knobs, profile = profile_knobs(project_knobs, name), name
            say(f"profile {name} (from the next turn): {rt.knobs.describe()}")
        elif slash.command == "context":
            say(await last_call_summary(rt, stream, root))
        else:
            say(unknown_command(slash))
        return True

    return command


def cmd_chat(args: argparse.Namespace) -> int:
    ws = load_project(args.dir)
    pipeline, input_name = chat_pipeline(ws, args.pipeline)

    async def read_line() -> str | None:
        def ask() -> str | None:
            try:
                return input("you> ")
            except EOFError:
                return None

        return await asyncio.to_thread(ask)

    async def go() -> int:
        rt = await open_runtime(ws, [pipeline.name], TerminalApproval(), printer=None)
        if args.profile:
            try:
                rt.knobs = profile_knobs(rt.knobs, args.profile)
            except KnobError:
                await close_runtime(rt)
                raise
        model = f"{rt.provider.name}/{rt.provider.model}" if rt.provider else "no model"
        demo = "  (the offline demo model: nothing it says comes from a real LLM)" if model.startswith("demo") else ""
        say(f"chat with pipeline '{pipeline.name}' on stream '{args.run}' — {model}{demo}")
        if notice := pipeline_notice(args.pipeline, pipeline):
            say(f"  {notice}")
        say(f"  store: {ws.store}    /quit or Ctrl-D to leave")
        if rt.sandbox.line:
            say(f"  {rt.sandbox.line}")
        try:
            commands = plain_commands(rt, ws.root, args.run)
            await chat_loop(rt, pipeline, input_name, args.run, read_line, say, commands)
        finally:
            await close_runtime(rt)
        return EXIT_OK

    try:
        quiet_child_watcher()
        return run_async(go())
    except KeyboardInterrupt:
        say("\ninterrupted; the events written so far are kept")
        return EXIT_INTERRUPTED
