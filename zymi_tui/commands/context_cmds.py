"""`zymi-tui replay` and `zymi-tui context`: every LLM call's context, rebuilt (or re-rendered)."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

from zymi_tui import GC_THRESHOLD
from zymi_tui.context.knobs import ContextKnobs, resolve_knobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.replay.call_context import (
    SAME_TRAJECTORY,
    CallContext,
)
from zymi_tui.replay.call_markdown import context_markdown
from zymi_tui.replay.store_replay import context_at, recorded_knobs, replay_store
from zymi_tui.text_safety import escape_controls

from .common import (
    EXIT_OK,
    CommandError,
    Progress,
    _stdout_is_terminal,
    add_project_arg,
    add_store_arg,
    close_reader,
    located,
    raw_line,
    report_skipped,
    run_reading,
    shown,
)
from .flags import (
    add_runs_filter,
    add_step_args,
    add_strict_arg,
    refuse_guess,
    resolve_step_stream,
    run_step_streams,
)
from .replay_json import JSON_LINE, est_tokens, row_json, row_line
from .replay_totals import ReplayTotals, knobs_line, print_totals
from .streamed_table import Cell, Column, StreamedTable


def _common(p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    add_project_arg(p, "prefix, knobs")
    p.add_argument("--profile", metavar="P", help="knobs of a profile: coding, chat, eval or one of profiles.yml")
    p.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="KNOB=VALUE",
        help="override one knob (repeatable), e.g. --set observation_window=4 --set forget_after_turns=off",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    add_strict_arg(p)


def configure(command: str, p: argparse.ArgumentParser) -> None:
    {"replay": _replay_parser, "context": _context_parser}[command](p)


def _replay_parser(p: argparse.ArgumentParser) -> None:
    _common(p)
    add_runs_filter(p)
    p.add_argument("--messages", action="store_true", help="with --json: the messages in OpenAI wire form")
    p.add_argument("--tokens", action="store_true", help="also estimate tokens per call (offline o200k; slower)")
    p.add_argument(
        "--compare", metavar="P1,P2[,...]",
        help="the whole store under several profiles side by side (as `zymi-tui compare --profiles`)",
    )  # fmt: skip
    p.set_defaults(func=_replay_or_compare)


def _context_parser(c: argparse.ArgumentParser) -> None:
    _common(c)
    add_step_args(c)
    c.add_argument("--seq", required=True, type=int, metavar="N", help="the call: its LlmCallStarted's sequence")
    c.add_argument(
        "--format", choices=["text", "json", "md"], default="text",
        help="json: the call with its exact request body (as --json); md: layers, reasons, sizes and texts",
    )  # fmt: skip
    c.set_defaults(func=_context)


def _setup(args: argparse.Namespace) -> tuple[StoreLocation, Path | None, ContextKnobs | None]:
    location, project = located(args)
    base = recorded_knobs(project)
    knobs = None if args.profile is None and not args.sets else resolve_knobs(base, args.profile, args.sets)
    if knobs == base and project is not None:
        knobs = None  # the recorded knobs: a plain replay, not a what-if (without a project, they are
        # unknown: a foreign agent's steps, recorded under their own policy, are a what-if under them)
    return location, project, knobs


def _replay_or_compare(args: argparse.Namespace) -> int:
    if args.compare:
        from zymi_tui.commands.tuning_cmds import CompareRequest, compare

        return compare(CompareRequest(located(args), args.compare, args, format="json" if args.json else "table"))
    if getattr(args, "own_process", False):  # a process of its own: no caller's collector settings to keep
        gc.set_threshold(GC_THRESHOLD)
    setup = _setup(args)
    return run_reading(setup[0], lambda inline: _replay(args, setup, inline=inline))


async def _replay(
    args: argparse.Namespace,
    setup: tuple[StoreLocation, Path | None, ContextKnobs | None],
    *,
    inline: bool = False,
) -> int:
    location, project, knobs = setup
    reader = await open_reader(location, inline=inline)
    try:
        total = await reader.max_global_id()
        totals = ReplayTotals()  # running: no row is kept (a million-event replay stays flat in memory)
        table = None if args.json else StreamedTable(REPLAY_COLUMNS, styled=_stdout_is_terminal())
        streams = await run_step_streams(reader, args)
        progress = Progress("replaying", total)
        write, encode = sys.stdout.write, JSON_LINE  # a line at a time: out as soon as it is made
        async for row in replay_store(reader, project=project, knobs=knobs, streams=streams):
            if totals.rows % 200 == 0:
                progress.at(row.global_id)
            refuse_guess(row, args.strict)
            totals.add(row, args.tokens)
            if table is None:
                line = None if args.messages else row_line(row, tokens=args.tokens)
                if line is None:
                    line = encode(row_json(row, messages=args.messages, tokens=args.tokens))
                write(raw_line(line) + "\n")
            else:
                if row.prefix_inferred and not totals.titled:
                    totals.titled = True
                    table.title(INFERRED_TITLE)
                table.row(_cells(row, args.tokens))
        progress.end()
        if not totals.rows and project is None:
            raise CommandError(
                f"{location}: no project beside the store and no recorded LLM call to infer the prefix from; "
                "pass --project DIR"
            )
        if table is not None:
            table.header()  # no row: the header alone, as before
        print_totals(totals, args.json, knobs, project, args.tokens)
        report_skipped(reader)
    finally:
        await close_reader(reader)
    return EXIT_OK


INFERRED_TITLE = (
    "Layer A inferred (no project): '~' marks its estimated size, per step run the first recorded "
    "call minus the rest rebuilt; the rebuilt sizes are estimates"
)
REPLAY_COLUMNS = (
    Column("stream", width=8),
    Column("seq", right=True, width=5),
    Column("it", right=True, width=3),
    Column("kind", width=len("compaction (simulated)")),
    Column("recorded", right=True),
    Column("rebuilt", right=True),
    Column("A", right=True, width=5),
    Column("msgs", right=True),
    Column("input tok (rec.)", right=True),
    Column("est. tok", right=True),
    Column("note"),
)


def _cells(row: CallContext, tokens: bool) -> list[str | Cell]:
    r = row.rendered
    kind = "compaction" if row.is_compaction else "agent"
    if row.hard_cap_failure:
        kind = "FAIL hard cap" if r is not None and r.hard_cap_exceeded else "recorded FAIL, passes"
    if row.simulated:
        kind += " (simulated)"
    rebuilt = "?" if r is None else str(r.chars)
    differs = r is not None and not row.whatif and not row.simulated and r.chars != row.recorded_chars
    note: list[tuple[str, bool]] = []
    if differs and row.foreign:
        # a foreign agent's call: no zymi build to disagree with; the agent's input is not its history appended
        note.append(("rewritten by the agent", False))
        differs = False
    if row.prefix_inferred:
        note.append((", " if note else "", False))
        note.append(("prefix inferred", False))
    if r is not None and r.hard_cap_exceeded and not row.hard_cap_failure:
        note.append((", " if note else "", False))
        note.append(("would fail hard cap", True))
    return [
        escape_controls(row.stream_id.split(":step:")[-1]),
        str(row.sequence),
        str(row.iteration),
        kind,
        str(row.recorded_chars) if not row.simulated else "-",
        Cell(((rebuilt, False), ("≠", True))) if differs else rebuilt,
        "?" if r is None else ("~" if row.prefix_inferred else "") + str(r.layer_bytes.get("A", 0)),
        "?" if r is None else str(r.message_count),
        "-" if row.recorded_input_tokens is None else str(row.recorded_input_tokens),
        "-" if not tokens or r is None else f"~{est_tokens(row)}",
        Cell(tuple(note)) if note else "",
    ]


def _context(args: argparse.Namespace) -> int:
    # the request body needs the engine's providers and tools: imported by `context` only, not by `replay`
    from .export_cmds import project_bodies
    from .otel_pair import row_body

    location, project, knobs = _setup(args)

    async def read(inline: bool) -> CallContext:
        reader: EventReader = await open_reader(location, inline=inline)
        try:
            try:
                stream = await resolve_step_stream(reader, args)
                assert stream is not None
                return await context_at(reader, stream, args.seq, project=project, knobs=knobs)
            finally:
                report_skipped(reader)
        finally:
            await close_reader(reader)

    row = run_reading(location, read)
    refuse_guess(row, args.strict)
    r = row.rendered
    fmt = "json" if args.json else args.format
    if fmt == "md":
        sys.stdout.write(raw_line(context_markdown(row, row_body(project_bodies(project), row))))
        return EXIT_OK
    if fmt == "json":
        obj = row_json(row, messages=True)
        obj["request_body"] = row_body(project_bodies(project), row)
        if r is not None:
            obj["entries"] = [
                {"layer": e.layer, "role": e.message.role, "bytes": e.bytes, "tokens": e.tokens, "reason": e.reason,
                 "source_seq": e.source_seq, "simulated": e.simulated}
                for e in r.entries
            ]  # fmt: skip
        sys.stdout.write(raw_line(json.dumps(obj, ensure_ascii=False)) + "\n")
        return EXIT_OK
    from .common import err, out  # rich's consoles: loaded by the text view only

    kind = "compaction call" if row.is_compaction else f"iteration {row.iteration}"
    out.print(f"[bold]{shown(row.stream_id)}[/] seq {row.sequence} ({kind})")
    if r is None:
        err.print("the prefix cannot be known here (no project)")
        return EXIT_OK
    sent = "sent by the agent" if row.foreign else "recorded"  # a foreign agent's call: no zymi build ran
    out.print(
        f"{'what-if' if row.whatif else 'rebuilt'}: {r.chars} bytes, {r.message_count} messages, "
        f"~{sum(e.tokens for e in r.entries)} tokens (estimated) | {sent}: {row.recorded_chars} bytes, "
        f"{row.recorded_message_count} messages, input tokens {row.recorded_input_tokens} (recorded)"
    )
    recorded = knobs_line({row.knobs_source}, {r.knobs.describe()}, project)[0]
    out.print(f"knobs: {r.knobs.describe() if row.whatif else recorded}" + (
        f"  [yellow]{SAME_TRAJECTORY}[/]" if row.whatif else ""))  # fmt: skip
    from rich.table import Table

    t = Table(box=None, header_style="bold", pad_edge=False)
    if r.prefix_inferred:
        t.title = (
            f"Layer A ~{r.layer_bytes.get('A', 0)} B inferred (no project): {row.prefix_basis}; sizes are estimates"
        )
        t.title_justify = "left"
    for col in ("#", "layer", "role", "seq", "bytes", "~tokens (est.)", "reason", "content"):
        t.add_column(col, justify="left" if col in ("layer", "role", "reason", "content") else "right")
    for i, entry in enumerate(r.entries):
        text = getattr(entry.message, "content", None) or ""
        preview = text.replace("\n", "⏎")[:60]
        t.add_row(
            str(i), entry.layer, entry.message.role, "" if entry.source_seq is None else str(entry.source_seq),
            str(entry.bytes), str(entry.tokens), shown(entry.reason), shown(preview),
        )  # fmt: skip
    out.print(t)
    if r.prefix_inferred:
        out.print(f"[yellow]Layer A inferred[/] (no project): ~{r.layer_bytes.get('A', 0)} B, {row.prefix_basis}")
    if r.forgotten:
        out.print(f"{r.forgotten} older message(s) dropped by forget_after_turns={r.knobs.forget_after_turns}")
    if r.compacted_away:
        out.print(f"{r.compacted_away} step-stream message(s) replaced by compaction summaries")
    if r.dropped_by_fresh:
        out.print(f"{r.dropped_by_fresh} message(s) of earlier runs dropped by mode: fresh")
    if r.compaction:
        lo, hi = r.compaction.replaces_seq_range
        out.print(f"soft cap exceeded ({r.chars} > {r.knobs.soft_cap_chars}): zymi would compact seq {lo}..{hi}")
    if r.hard_cap_exceeded:
        out.print(f"[red]hard cap exceeded: {r.chars} chars > {r.knobs.hard_cap_chars} hard cap[/]")
    return EXIT_OK
