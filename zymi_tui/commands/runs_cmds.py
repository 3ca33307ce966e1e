"""`zymi-tui runs`: runs as zymi pairs them (or one per chat turn), read from the bookkeeping kinds.

Its own module so that listing runs imports the store readers and `row_envelope` only: not the whole-event
reader of the event kinds (tests/test_cli_start.py checks it).
"""

from __future__ import annotations

import argparse
import json
import sys

from zymi_tui.events.factory import copy_in_progress, open_reader
from zymi_tui.events.runs import list_runs

from .common import EXIT_OK, add_store_arg, close_reader, located, out, raw_line, run_async, warn
from .runs_view import print_runs


def configure(command: str, p: argparse.ArgumentParser) -> None:
    _runs_args(p)


async def _runs(args: argparse.Namespace) -> int:
    store = located(args).store
    reader = await open_reader(store)
    try:
        runs = await list_runs(reader, turns=args.turns)
    finally:
        await close_reader(reader)
    copying = await copy_in_progress(store)
    if copying is not None:
        warn(copying.describe(reader.label))
    if args.pipeline:
        runs = [r for r in runs if r.pipeline == args.pipeline]
    runs = runs[: args.limit] if args.limit else runs
    if args.raw:
        for r in runs:
            obj = r.zymi_raw()
            if args.turns:
                obj |= {"turn": r.turn, "correlation_id": r.correlation_id}
            sys.stdout.write(raw_line(json.dumps(obj, ensure_ascii=False, separators=(",", ":"))) + "\n")
        return EXIT_OK
    if not runs:
        out.print("No runs recorded yet.")
        return EXIT_OK
    print_runs(out, runs, args.turns, f"{len(runs)} run(s){' (one row per chat turn)' if args.turns else ''}")
    return EXIT_OK


def _runs_args(p: argparse.ArgumentParser) -> None:
    p.description = (
        "List runs as `zymi runs` pairs them (first PipelineRequested / PipelineCompleted of a "
        "stream). With --turns, every request on a chat stream is its own row, paired by correlation id."
    )
    add_store_arg(p)
    p.add_argument("-p", "--pipeline", help="only runs of this pipeline")
    p.add_argument("-l", "--limit", type=int, default=0, help="show at most N runs (default: all)")
    p.add_argument("--turns", action="store_true", help="one row per chat turn instead of one per stream")
    p.add_argument("--raw", action="store_true", help="one JSON object per line (zymi's `runs --raw` fields)")
    p.set_defaults(func=lambda a: run_async(_runs(a)))
