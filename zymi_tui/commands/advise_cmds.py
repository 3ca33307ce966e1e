"""`zymi-tui advise`: findings read off a store, each with a recommendation replayed on it."""

from __future__ import annotations

import argparse
import gc

from rich.markup import escape

from zymi_tui.engine.tool_catalog import definition_bytes
from zymi_tui.events.factory import open_reader
from zymi_tui.replay.advice import Advice, advise, head_lines, json_parts, markdown_parts, recommendation_lines
from zymi_tui.replay.sweep_pool import GC_THRESHOLD
from zymi_tui.text_safety import escape_controls

from .common import EXIT_OK, add_project_arg, add_store_arg, close_reader, located, print_markup, run_async, shown
from .flags import add_runs_filter, run_step_streams
from .tuning_cmds import add_workers_arg, prices_arg, write_parts


def configure(command: str, p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    add_project_arg(p, "prefix, knobs")
    add_runs_filter(p)
    p.add_argument(
        "--prices", metavar="FILE", help="price table YAML (default: ~/.config/zymi-tui/prices.yml or built-in)"
    )
    p.add_argument("--model", help="price as this model (default: llm.model of project.yml)")
    p.add_argument("--json", action="store_true", help="the report as JSON (same as --format json)")
    p.add_argument(
        "--format", choices=["text", "json", "md"], default="text", help="text (default), json, or md (Markdown)"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write the report there")
    add_workers_arg(
        p,
        "processes replaying the candidates (default: this process, cheaper at 1M events; with two cores, from "
        "20,000 to 500,000 events, a forked second one too)",
    )
    p.set_defaults(func=cmd_advise)


async def run_advise(args: argparse.Namespace) -> Advice:
    location, project = located(args)
    prices = prices_arg(args)
    reader = await open_reader(location)
    try:
        streams = await run_step_streams(reader, args)
        return await advise(
            reader, project, prices=prices, model=args.model, tool_bytes=definition_bytes, streams=streams,
            location=location, workers=args.workers, split=args.own_process,
        )  # fmt: skip
    finally:
        await close_reader(reader)


def cmd_advise(args: argparse.Namespace) -> int:
    # the replays make builders and figures by the hundred thousand: at the default threshold the collector
    # rescans the live ones thousands of times (as in the pool's workers); this process ends after the command
    gc.set_threshold(GC_THRESHOLD)
    advice = run_async(run_advise(args))
    fmt = "json" if args.json else args.format
    if fmt == "json":
        write_parts(json_parts(advice), args.output)
    elif fmt == "md" or args.output:
        # store text (tool names, stream ids) with its terminal controls escaped: the report is read, on a terminal too
        write_parts((escape_controls(part, keep="\n") for part in markdown_parts(advice)), args.output)
    else:
        print_advice(advice)
    return EXIT_OK


PRINT_LINES = 2000  # lines rendered per print: one print a line is slow, the whole report in one is big


def print_advice(advice: Advice) -> None:
    """The report as text, rendered a few thousand lines at a time (a report of thousands of findings is
    thousands of lines: one `print` a line cost a second per 10k of them, and all of them in one print
    held the whole rendering, ~240 MB at 16,500 findings)."""
    lines = [f"[yellow]⚠ {escape(advice.caveat)}[/]", *(shown(line) for line in head_lines(advice))]
    if not advice.findings:
        lines.append("no findings")
    for f in advice.findings:
        if len(lines) >= PRINT_LINES:
            print_markup("\n".join(lines))
            lines = []
        lines.append(f"\n[bold]{shown(f.signal)}[/]  {shown(f.summary)}")
        if f.stream_id is not None:
            lines.append(f"  at {shown(f.stream_id)} seq {f.sequence}")
        lines += (f"  - {shown(e)}" for e in f.evidence)
        rec = f.recommendation
        if rec is None:
            continue
        lines.append(f"  [{'dim' if rec.nothing_to_change else 'green'}]→ {shown(rec.text)}[/]")
        lines += (f"    {shown(line)}" for line in recommendation_lines(rec))
    print_markup("\n".join(lines))
