"""`zymi-tui rent`, `find` and `tune`: one step stream of a store, replayed call by call."""

from __future__ import annotations

import argparse
import json
import sys
from bisect import insort
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from zymi_tui.context.knobs import ContextKnobs, KnobDict, make_knobs, resolve_knobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import EventReader
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.compare import CAVEAT, knob_dict
from zymi_tui.replay.event_pages import replay_events
from zymi_tui.replay.presence import Occurrence, call_presence, occurrences
from zymi_tui.replay.rent import observation_rent
from zymi_tui.replay.store_replay import recorded_knobs, replay_many, replay_store

from .common import (
    EXIT_OK,
    CommandError,
    add_project_arg,
    add_store_arg,
    close_reader,
    located,
    need_terminal,
    out,
    run_async,
    run_reading,
    shown,
)
from .flags import (
    add_step_args,
    resolve_step_stream,
)


def make_replay(
    reader: EventReader, project: Path | None, streams: list[str] | None
) -> Callable[[KnobDict | None], AsyncIterator[CallContext]]:
    def replay(knobs: KnobDict | None) -> AsyncIterator[CallContext]:
        ck = None if knobs is None else make_knobs(dict(knobs), "profile")
        return replay_store(reader, project=project, knobs=ck, streams=streams)

    return replay


# -- rent ----------------------------------------------------------------------------------------
def cmd_rent(args: argparse.Namespace) -> int:
    location, project = located(args)

    async def go(inline: bool) -> Any:
        base = recorded_knobs(project)
        reader = await open_reader(location, inline=inline)
        try:
            stream = await resolve_step_stream(reader, args)
            assert stream is not None
            replay = make_replay(reader, project, [stream])
            return await observation_rent(replay, stream, window=args.window, base=knob_dict(base))
        finally:
            await close_reader(reader)

    rent = run_reading(location, go)
    ranked = rent.ranked(args.top)
    if args.json:
        doc = {
            "stream_id": rent.stream_id,
            "calls": rent.calls,
            "chars_total": rent.chars_total,
            "what_if_window": rent.what_if_window,
            "chars_total_what_if": rent.chars_total_what_if,
            "caveat": CAVEAT if rent.what_if_window is not None else None,
            "observations": [{**vars(o), "saved_bytes": o.saved_bytes} for o in ranked],
        }
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        return EXIT_OK
    out.print(
        f"[bold]{shown(rent.stream_id)}[/]: {rent.calls} call(s), {rent.chars_total:,} input bytes (recorded knobs)"
    )
    table = Table()
    for col in ("seq", "tool", "bytes", "sent in full", "masked", "rent (bytes×calls)"):
        table.add_column(col, justify="right")
    if rent.what_if_window is not None:
        table.add_column(f"saved at window {rent.what_if_window} (est.)", justify="right")
    for o in ranked:
        row = [
            str(o.source_seq),
            shown(o.tool),
            f"{o.bytes_full:,}",
            str(o.calls_full),
            str(o.calls_masked),
            f"{o.rent_bytes:,}",
        ]
        if rent.what_if_window is not None:
            row.append(f"{o.saved_bytes or 0:,}")
        table.add_row(*row)
    out.print(table)
    if rent.what_if_window is not None and rent.chars_total_what_if is not None:
        out.print(f"[yellow]⚠ {escape(CAVEAT)}[/]")
        out.print(f"window {rent.what_if_window}: {rent.chars_total_what_if:,} input bytes "
                  f"({rent.chars_total_what_if - rent.chars_total:+,}) (estimated)")  # fmt: skip
    return EXIT_OK


# -- find ----------------------------------------------------------------------------------------
def cmd_find(args: argparse.Namespace) -> int:
    if not args.text:
        raise CommandError("find: TEXT is empty; give the string to look for")

    location, project = located(args)

    async def go(inline: bool) -> None:
        base = recorded_knobs(project)
        knobs = resolve_knobs(base, args.profile, args.sets or [])
        reader = await open_reader(location, inline=inline)
        try:
            stream = await resolve_step_stream(reader, args)
            assert stream is not None
            await _find_in(reader, project, stream, args, knobs, what_if=knobs != base)
        finally:
            await close_reader(reader)

    run_reading(location, go)
    return EXIT_OK


async def _find_in(
    reader: EventReader, project: Path | None, stream: str, args: argparse.Namespace, knobs: ContextKnobs, what_if: bool
) -> None:
    """`find`'s lines, printed as the replay of the run makes each call: the run decoded once, for the
    replay and for the stream's own events (where the string is), neither kept."""
    places: list[Occurrence] = []  # in sequence order (as the stream's events sorted by it)
    compactions: list[tuple[int, int, int]] = []

    async def decoded() -> AsyncGenerator[ReplayEvent, None]:
        async for se in replay_events(reader, [stream]):
            if se.stream_id == stream:
                found, compacted = occurrences([se], args.text)
                for place in found:
                    insort(places, place, key=lambda p: p.sequence)
                for c in compacted:
                    insort(compactions, c, key=lambda c: c[0])
            yield se

    if what_if and not args.json:
        out.print(f"[yellow]⚠ {escape(CAVEAT)}[/]  ({escape(knobs.describe())})")
    style = {"full": "green", "masked": "yellow", "compacted": "magenta", "forgotten": "red", "absent": "red"}
    lines: list[str] = []
    knob_values = knob_dict(knobs)
    replayed = replay_many(reader, project=project, knobs=[knobs], streams=[stream], events=decoded())
    async for _, call in replayed:
        assert isinstance(call, CallContext)  # (not figures_only)
        p = call_presence(call, places, compactions, args.text, knob_values)
        if p is None:
            continue
        if args.json:
            sys.stdout.write(json.dumps({**vars(p), "what_if": what_if}, ensure_ascii=False) + "\n")
            continue
        lines.append(f"seq {p.sequence:>5}  [{style.get(p.status, 'bright_black')}]{p.status:<9}[/] {shown(p.why)}")
        if len(lines) == 1000:  # rich's cost is per call (performance-notes)
            out.print("\n".join(lines))
            lines.clear()
    if lines:
        out.print("\n".join(lines))


# -- tune (the screens) -------------------------------------------------------------------------
async def step_stream_to_tune(store: StoreLocation, args: argparse.Namespace) -> str | None:
    """The step stream named on the line, else the one with the most events."""
    reader = await open_reader(store)
    try:
        named = await resolve_step_stream(reader, args, required=False)
        steps = [s for s in await reader.streams() if ":step:" in s.stream_id]
    finally:
        await close_reader(reader)
    return named or (max(steps, key=lambda s: s.count).stream_id if steps else None)


def cmd_tune(args: argparse.Namespace) -> int:
    from zymi_tui.tui.tuning.app import TuningApp
    from zymi_tui.tui.tuning.compare_screen import CompareScreen
    from zymi_tui.tui.tuning.editor import TuningScreen
    from zymi_tui.tui.tuning.sweep_screen import SweepScreen

    location, project = located(args)
    recorded_knobs(project)  # a bad runtime.context fails here, with one line
    need_terminal("tune")
    if args.compare:
        app = TuningApp(location, lambda _r: CompareScreen(location, project=project, profiles=args.compare))
    elif args.sweep:
        app = TuningApp(location, lambda _r: SweepScreen(location, project=project, windows=args.window,
                                                         soft_caps=args.soft_cap))  # fmt: skip
    else:
        stream = run_async(step_stream_to_tune(location, args))
        if stream is None:
            raise CommandError(f"{location}: no step stream with LLM calls to tune")
        app = TuningApp(location, lambda r: TuningScreen(r, stream, project=project, sequence=args.seq))
    app.run()
    return app.return_code or EXIT_OK  # 1 when the app died (the one-line error names the log)


def configure(command: str, p: argparse.ArgumentParser) -> None:
    {"rent": _rent_parser, "find": _find_parser, "tune": _tune_parser}[command](p)


def _rent_parser(p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    add_project_arg(p, "prefix, knobs")
    add_step_args(p)
    p.add_argument("--window", type=int, metavar="W", help="also show what observation_window=W would have saved")
    p.add_argument("--top", type=int, default=20, metavar="N", help="show the N costliest tool results (default 20)")
    p.add_argument("--json", action="store_true", help="one JSON document: the totals and every ranked result")
    p.set_defaults(func=cmd_rent)


def _find_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "text", metavar="TEXT", help="the string to look for (it comes first: `find TEXT STORE --step-stream S`)"
    )
    add_store_arg(p)
    add_project_arg(p, "prefix, knobs")
    add_step_args(p)
    p.add_argument("--profile", metavar="P", help="look under this profile instead of the recorded knobs")
    p.add_argument(
        "--set", dest="sets", action="append", metavar="KNOB=VALUE",
        help="look under the recorded knobs with this one changed (repeatable), e.g. --set observation_window=4",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object per call")
    p.set_defaults(func=cmd_find)


def _tune_parser(p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    add_project_arg(p, "prefix, knobs")
    add_step_args(p)
    p.add_argument("--seq", type=int, metavar="N", help="the call (LlmCallStarted sequence) shown first")
    p.add_argument("--compare", metavar="P1,P2[,...]", help="open the profile comparison screen instead")
    p.add_argument("--sweep", action="store_true", help="open the sweep screen instead")
    p.add_argument("--window", metavar="LIST", help="with --sweep: observation_window values")
    p.add_argument("--soft-cap", dest="soft_cap", metavar="LIST", help="with --sweep: soft_cap_chars values")
    p.set_defaults(func=cmd_tune)
