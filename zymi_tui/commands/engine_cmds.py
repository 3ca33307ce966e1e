"""`init`, `run`, `serve`: the agent engine, driven the way zymi's CLI drives zymi (`chat --plain`: plain_chat)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from zymi_tui.commands import modules_loading
from zymi_tui.commands.common import (
    DIR_HELP,
    EXIT_FAIL,
    EXIT_OK,
    CommandError,
    hold_ctrl_c,
    let_ctrl_c_through,
    quiet_child_watcher,
    run_async,
)
from zymi_tui.commands.workspace import load_project, print_footer, say, say_interrupted

if TYPE_CHECKING:
    from zymi_tui.engine.config import PipelineConfig

# The engine (asyncio, the runner, the runtime) is imported by each command when it runs: `run` appends
# its first event before it loads it (engine/run_request.py; tests/test_engine_startup_modules.py).


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
    with modules_loading(args.own_process):  # PyYAML and the project's modules, no GC pass over them
        ws = load_project(args.dir)
    inputs = _inputs(args.input or [])
    pipeline = ws.pipeline(args.pipeline)
    say(f"Pipeline: {pipeline.name}")
    if pipeline.description:
        say(f"  {pipeline.description}")
    say("")
    if sys.stdin.isatty() and sys.stdout.isatty():
        _prompt_inputs(pipeline, inputs)

    with modules_loading(args.own_process):
        from zymi_tui.engine.run_request import request_run

    # Ctrl-C waits from the run's first event until the run can seal itself as interrupted
    hold_ctrl_c()
    try:
        requested = request_run(ws, pipeline, inputs)
    except BaseException:
        let_ctrl_c_through()
        raise

    with modules_loading(args.own_process):  # the engine: asyncio, the runner, the runtime
        from zymi_tui.engine.approvals import TerminalApproval
        from zymi_tui.engine.run_seal import SealWatch
        from zymi_tui.engine.runner import RunHalted, run_pipeline
        from zymi_tui.engine.runtime import close_runtime, open_runtime

    watch = SealWatch()

    async def go() -> int:
        rt = await open_runtime(
            ws, [pipeline.name], TerminalApproval(), printer=say, reasoning=TerminalApproval(), requested=requested
        )
        if rt.sandbox.line:
            say(rt.sandbox.line)
        rt.recorder.listeners.append(watch)
        try:
            let_ctrl_c_through()  # from here a Ctrl-C cancels the run, which seals itself
            result = await run_pipeline(rt, pipeline.name, inputs, requested=requested)
        except RunHalted as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_FAIL
        finally:
            await close_runtime(rt)
        say("---")
        return print_footer(result.success, result.final_output)

    try:
        quiet_child_watcher()
        return run_async(go(), held=True)
    except KeyboardInterrupt:
        return say_interrupted(ws.store, watch)


def cmd_init(args: argparse.Namespace) -> int:

    from zymi_tui.engine.scaffold import init_project

    root = Path.cwd()
    files = init_project(root, args.name, args.example)
    say(f"Initialized zymi project '{args.name or root.name}' in {root}")
    for f in files:
        say(f"  {f}")
    say('\nNext: zymi-tui run main -i task="..."   (on the offline demo model; set llm: for a real one)')
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from zymi_tui.engine.approvals import TerminalApproval
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

    from zymi_tui.engine.connectors import check_doors

    check_doors(ws.project.connectors, insecure=args.insecure)  # before the store is opened or a line said

    async def go() -> int:
        rt = await open_runtime(ws, served, TerminalApproval(), printer=say)
        target = ", ".join(served) if not args.all else f"any pipeline (--all): {', '.join(served)}"
        say(f"zymi serve: listening for PipelineRequested events targeting {target}")
        say(f"  store: {ws.store}")
        say(f"  poll:  {args.poll_interval_ms}ms")
        say("  press Ctrl+C to stop")
        if rt.sandbox.line:
            say(f"  {rt.sandbox.line}")
        if ws.project.runtime is None:
            say(
                "  note:  runtime.context not set — using engine defaults; see docs/context.md for chat/coding profiles"
            )
        try:
            await serve(rt, served, args.poll_interval_ms, say, insecure=args.insecure)
        finally:
            await close_runtime(rt)
        return EXIT_OK

    try:
        quiet_child_watcher()
        return run_async(go())
    except KeyboardInterrupt:
        say("\nshutting down…")
        return EXIT_OK


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
    p.add_argument(
        "--insecure",
        action="store_true",
        help="let an http_inbound connector without `auth` listen on a non-loopback address (anyone who can "
        "reach it can drive the agent)",
    )
    p.set_defaults(func=cmd_serve)
    # `chat` is registered by chat_cmds (the chat screen; `chat --plain` runs plain_chat.cmd_chat)
