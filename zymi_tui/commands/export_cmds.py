"""`zymi-tui export`: a store's (or a run's) LLM calls as LHAR (context-lens) or OTLP/JSON spans."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.factory import open_reader
from zymi_tui.events.store import step_of
from zymi_tui.replay.calls import CallContext, recorded_knobs, replay_store
from zymi_tui.replay.export import ExportMeta, lhar_lines, otlp_traces

from .common import EXIT_OK, CommandError, add_store_arg, close_reader, located, run_async, warn
from .flags import add_runs_filter, run_step_streams
from .tuning_cmds import write_or_print


def row_body(bodies: RequestBodies, row: CallContext) -> dict[str, Any] | None:
    """The exact request body of a replayed call (None without a project or a rebuilt context)."""
    if row.rendered is None:
        return None
    return bodies.body(row.rendered.wire(), pipeline=row.pipeline, step=step_of(row.stream_id),
                       compaction=row.is_compaction)  # fmt: skip


def project_bodies(project: Path | None) -> RequestBodies:
    bodies = RequestBodies(project)
    if bodies.problem:
        warn(bodies.problem)
    return bodies


def configure(command: str, p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    p.add_argument("--project", metavar="DIR", help="the project folder the store was recorded with (prefix, tools)")
    p.add_argument(
        "--format",
        choices=["lhar", "otel", "svg"],
        required=True,
        help="lhar: context-lens's JSON Lines; otel: OTLP/JSON spans (GenAI conventions); svg: a screen",
    )
    p.add_argument(
        "--screen",
        choices=["dashboard", "advice", "life"],
        default="dashboard",
        help="with --format svg: the dashboard, its advice panel (A) or the message-life grid (L)",
    )
    p.add_argument("--size", default="120x40", metavar="WxH", help="with --format svg: the terminal size")
    add_runs_filter(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write there instead of stdout")
    p.set_defaults(func=cmd_export)


async def _rows(args: argparse.Namespace) -> tuple[list[CallContext], RequestBodies, int]:
    location, project = located(args)
    reader = await open_reader(location)
    try:
        streams = await run_step_streams(reader, args)
        rows = [r async for r in replay_store(reader, project=project, streams=streams)]
    finally:
        await close_reader(reader)
    return rows, project_bodies(project), recorded_knobs(project).hard_cap_chars


def _svg(args: argparse.Namespace) -> str:
    from zymi_tui.tui.snapshot import SnapshotError, screen_svg
    from zymi_tui.tui.target import Target

    width, _, height = args.size.partition("x")
    if not (width.isdigit() and height.isdigit()) or int(width) < 40 or int(height) < 12:
        raise CommandError(f"--size {args.size!r}: give WIDTHxHEIGHT, at least 40x12, e.g. 120x40")
    location, project = located(args)
    try:
        return run_async(screen_svg(Target(location, project), args.screen, (int(width), int(height))))
    except SnapshotError as e:
        raise CommandError(f"--screen {args.screen}: {e}") from None


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "svg":
        write_or_print(_svg(args), args.output)
        return EXIT_OK
    rows, bodies, hard_cap = run_async(_rows(args))
    meta = ExportMeta(model=bodies.model, provider=bodies.provider, window_tokens=hard_cap // 4)
    if args.format == "lhar":
        lines = lhar_lines(rows, meta, lambda row: row_body(bodies, row))
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    else:
        text = json.dumps(otlp_traces(rows, meta), ensure_ascii=False) + "\n"
    write_or_print(text, args.output)
    return EXIT_OK
