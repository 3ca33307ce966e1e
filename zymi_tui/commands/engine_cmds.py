"""`init`, `run`, `serve`, `chat`: the agent engine, driven the way zymi's CLI drives zymi."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from zymi_tui.commands.common import DIR_HELP, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, CommandError, run_async
from zymi_tui.commands.workspace import load_project, print_footer, say, say_interrupted
from zymi_tui.context.knobs import KnobError
from zymi_tui.engine.approvals import TerminalApproval
from zymi_tui.engine.chat import PROJECT_PROFILE, next_profile, profile_knobs, profile_names
from zymi_tui.engine.config import PipelineConfig
from zymi_tui.engine.runner import Runtime
from zymi_tui.engine.slash import Slash, help_text, unknown_command
from zymi_tui.events.kinds import LlmCallStarted


def _inputs(raw: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in raw:
        if "=" not in item:
            raise CommandError(f"invalid input '{item}': expected KEY=VALUE format")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def _prompt_inputs(pipeline: PipelineConfig, inputs: dict[str, str]) -> None:
    """zymi's TTY-only prompting for declared inputs not given with -i (docs/engine.md#input-prompts), on stderr."""
    asked = False
    for spec in pipeline.inputs:
        if spec.name in inputs:
            continue
        asked = True
        if spec.description:
            sys.stderr.write(f"\x1b[2m{spec.description}\x1b[0m\n")
        label = spec.name + ("" if spec.type == "string" else f" ({spec.type})")
        label += "" if spec.required else " [Enter to skip]"
        while True:
            sys.stderr.write(f"{label}: ")
            sys.stderr.flush()
            line = sys.stdin.readline()
            if not line:
                raise CommandError(f"input '{spec.name}' not provided (stdin closed)")
            value = line.strip()
            if value:
                inputs[spec.name] = value
                break
            if not spec.required:
                break
            sys.stderr.write(f"  '{spec.name}' is required\n")
    if asked:
        sys.stderr.write("\n")


def cmd_run(args: argparse.Namespace) -> int:
    from zymi_tui.engine.runner import RunHalted, SealWatch, run_pipeline
    from zymi_tui.engine.runtime import close_runtime, open_runtime

    ws = load_project(args.dir)
    inputs = _inputs(args.input or [])
    pipeline = ws.pipeline(args.pipeline)
    say(f"Pipeline: {pipeline.name}")
    if pipeline.description:
        say(f"  {pipeline.description}")
    say("")
    if sys.stdin.isatty() and sys.stdout.isatty():
        _prompt_inputs(pipeline, inputs)

    watch = SealWatch()

    async def go() -> int:
        rt = await open_runtime(ws, [pipeline.name], TerminalApproval(), printer=say, reasoning=TerminalApproval())
        rt.recorder.listeners.append(watch)
        try:
            result = await run_pipeline(rt, pipeline.name, inputs)
        except RunHalted as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_FAIL
        finally:
            await close_runtime(rt)
        say("---")
        return print_footer(result.success, result.final_output)

    try:
        return run_async(go())
    except KeyboardInterrupt:
        return say_interrupted(ws.store, watch)


def cmd_init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from zymi_tui.engine.scaffold import init_project

    root = Path.cwd()
    files = init_project(root, args.name, args.example)
    say(f"Initialized zymi project '{args.name or root.name}' in {root}")
    for f in files:
        say(f"  {f}")
    say('\nNext: zymi-tui run main -i task="..."   (on the offline demo model; set llm: for a real one)')
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from zymi_tui.engine.runtime import close_runtime, open_runtime
    from zymi_tui.engine.serve import serve

    ws = load_project(args.dir)
    if args.all and args.pipelines:
        raise CommandError("pass pipeline names or `--all`, not both")
    if args.all:
        served = sorted(ws.pipelines)
        if not served:
            raise CommandError("--all requires at least one pipeline in the project")
    else:
        served = list(dict.fromkeys(args.pipelines))
        if not served:
            raise CommandError("missing pipeline name. Pass one or more pipeline names, or `--all`.")
        missing = [p for p in served if p not in ws.pipelines]
        if missing:
            available = ", ".join(sorted(ws.pipelines)) or "(none)"
            raise CommandError(f"pipeline(s) not found: {', '.join(missing)}. Available: {available}")

    async def go() -> int:
        rt = await open_runtime(ws, served, TerminalApproval(), printer=say)
        target = ", ".join(served) if not args.all else f"any pipeline (--all): {', '.join(served)}"
        say(f"zymi serve: listening for PipelineRequested events targeting {target}")
        say(f"  store: {ws.store}")
        say(f"  poll:  {args.poll_interval_ms}ms")
        say("  press Ctrl+C to stop")
        if ws.project.runtime is None:
            say(
                "  note:  runtime.context not set — using engine defaults; see docs/context.md for chat/coding profiles"
            )
        try:
            await serve(rt, served, args.poll_interval_ms, say)
        finally:
            await close_runtime(rt)
        return EXIT_OK

    try:
        return run_async(go())
    except KeyboardInterrupt:
        say("\nshutting down…")
        return EXIT_OK


async def last_call_summary(rt: Runtime, stream: str, root: Path) -> str:
    """`/context` in the line-based chat: the last LLM call's context, layer by layer (as the model got it)."""
    from zymi_tui.replay.calls import ReplayError, context_at  # only when asked: `run` starts without it

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
    from zymi_tui.engine.chat import chat_loop, chat_pipeline, pipeline_notice
    from zymi_tui.engine.runtime import close_runtime, open_runtime

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
        try:
            commands = plain_commands(rt, ws.root, args.run)
            await chat_loop(rt, pipeline, input_name, args.run, read_line, say, commands)
        finally:
            await close_runtime(rt)
        return EXIT_OK

    try:
        return run_async(go())
    except KeyboardInterrupt:
        say("\ninterrupted; the events written so far are kept")
        return EXIT_INTERRUPTED


def configure(command: str, p: argparse.ArgumentParser) -> None:
    {"run": _run_parser, "init": _init_parser, "serve": _serve_parser}[command](p)


def _run_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("pipeline", metavar="PIPELINE", help="the pipeline to run, by its `name:`")
    p.add_argument("-i", "--input", action="append", metavar="KEY=VALUE", help="a pipeline input (repeatable)")
    p.add_argument("-d", "--dir", metavar="DIR", help=DIR_HELP)
    p.add_argument("--approval", choices=["terminal"], help="approval channel (only terminal)")
    p.set_defaults(func=cmd_run)


def _init_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--name", help="project name (default: the folder name)")
    p.add_argument("--example", help="scaffold an example project: demo")
    p.set_defaults(func=cmd_init)


def _serve_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("pipelines", nargs="*", metavar="PIPELINE", help="the pipelines to serve, by `name:` (or --all)")
    p.add_argument("--all", action="store_true", help="serve every pipeline of the project")
    p.add_argument("--poll-interval-ms", type=int, default=100, metavar="N", help="store poll interval (default 100)")
    p.add_argument("-d", "--dir", metavar="DIR", help=DIR_HELP)
    p.add_argument("--approval", choices=["terminal"], help="approval channel (only terminal)")
    p.set_defaults(func=cmd_serve)
    # `chat` is registered by chat_cmds (the chat screen; `chat --plain` runs cmd_chat above)
