"""`zymi-tui resume`: fork a run at a step and re-run from there (zymi's `resume`), optionally under other knobs."""

from __future__ import annotations

import argparse
import sys

from zymi_tui.commands.common import (
    DIR_HELP,
    EXIT_FAIL,
    EXIT_OK,
    CommandError,
    close_reader,
    quiet_child_watcher,
    run_async,
)
from zymi_tui.commands.workspace import load_project, print_footer, say, say_interrupted
from zymi_tui.context.knobs import resolve_knobs
from zymi_tui.engine.approvals import TerminalApproval
from zymi_tui.engine.loader import Workspace
from zymi_tui.engine.resume import KnobChoice, ResumePlan, fork, plan_lines, plan_resume
from zymi_tui.engine.run_seal import SealWatch
from zymi_tui.engine.runtime import close_runtime, open_runtime, workspace_knobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore


def knob_choice(ws: Workspace, profile: str | None, sets: list[str]) -> KnobChoice:
    knobs = resolve_knobs(workspace_knobs(ws), profile, sets)
    return KnobChoice(knobs, profile, tuple(sets))


def _show_plan(plan: ResumePlan, knobs: KnobChoice, *, dry_run: bool) -> None:
    lines = plan_lines(plan, dry_run=dry_run)
    if knobs.overridden:
        lines.insert(len(lines) - (0 if dry_run else 1), f"  knobs (re-execute): {knobs.describe()}")
    for line in lines:
        say(line)


async def _dry_run(ws: Workspace, args: argparse.Namespace, knobs: KnobChoice) -> int:
    reader = await open_reader(ws.store)
    try:
        plan = await plan_resume(reader, ws, args.stream, args.from_step)
    finally:
        await close_reader(reader)
    _show_plan(plan, knobs, dry_run=True)
    return EXIT_OK


async def _fork(ws: Workspace, args: argparse.Namespace, knobs: KnobChoice, watch: SealWatch) -> int:
    reader = await open_reader(ws.store)
    try:  # validate with a reader first: a bad request opens no writer
        plan = await plan_resume(reader, ws, args.stream, args.from_step)
    finally:
        await close_reader(reader)
    rt = await open_runtime(ws, [plan.pipeline], TerminalApproval(), printer=say, reasoning=TerminalApproval())
    try:
        _show_plan(plan, knobs, dry_run=False)
        if rt.sandbox.line:
            say(rt.sandbox.line)
        rt.recorder.listeners.append(watch)
        outcome = await fork(rt, plan, knobs)
    finally:
        await close_runtime(rt)
    say("---")
    say(f"New stream: {outcome.stream_id}")
    if outcome.error is not None:
        print(f"error: {outcome.error}", file=sys.stderr)
        return EXIT_FAIL
    return print_footer(outcome.success, outcome.final_output)


def cmd_resume(args: argparse.Namespace) -> int:
    ws = load_project(args.dir)
    knobs = knob_choice(ws, args.profile, args.sets)
    if isinstance(ws.store, SqliteStore) and not ws.store.path.is_file():
        raise CommandError(f"no event store found at {ws.store.path}. Cannot resume.")
    watch = SealWatch()
    try:
        quiet_child_watcher()
        return run_async(_dry_run(ws, args, knobs) if args.dry_run else _fork(ws, args, knobs, watch))
    except KeyboardInterrupt:
        return say_interrupted(ws.store, watch)


def configure(command: str, p: argparse.ArgumentParser) -> None:
    p.add_argument("stream", metavar="RUN", help="the parent run's stream (see `zymi-tui runs`)")
    p.add_argument("--from-step", required=True, metavar="STEP", help="the step to fork at")
    p.add_argument("--dry-run", action="store_true", help="print the resume plan and exit; writes nothing")
    p.add_argument("--profile", metavar="P", help="knobs of a profile for the re-run steps: coding, chat, eval, ...")
    p.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="KNOB=VALUE",
        help="override one knob for the re-run steps (repeatable), e.g. --set observation_window=4",
    )  # fmt: skip
    p.add_argument("-d", "--dir", metavar="DIR", help=DIR_HELP)
    p.add_argument("--approval", choices=["terminal"], help="approval channel (only terminal)")
    p.set_defaults(func=cmd_resume)
