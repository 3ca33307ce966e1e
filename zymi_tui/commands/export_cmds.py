"""`zymi-tui export`: a store's (or a run's) LLM calls as LHAR (context-lens), as OpenTelemetry GenAI
traces (an OTLP/JSON file, or pushed to an OTLP/HTTP collector: Phoenix, Langfuse, Jaeger, an
OpenTelemetry Collector), or a screen as SVG."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

from zymi_tui import GC_THRESHOLD
from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.factory import open_reader
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK, EventReader
from zymi_tui.project.locate import Located
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.export_calls import follow, walk
from zymi_tui.telemetry.otlp_lines import OtlpJsonLines
from zymi_tui.telemetry.otlp_push import OtlpPusher
from zymi_tui.telemetry.otlp_wire import SpanBatcher, resource_attributes

from . import common
from .common import (
    EXIT_OK,
    PROGRESS_FROM,
    CommandError,
    Progress,
    add_project_arg,
    add_store_arg,
    close_reader,
    located,
    run_async,
    run_reading,
    warn,
)
from .flags import add_runs_filter, run_step_streams
from .otel_pair import SpansPartner, partner_for, trace_builder

if TYPE_CHECKING:
    from . import otel_writer
    from .lhar_later import LaterEntries
    from .lhar_pair import FilesPartner


def project_bodies(project: Path | None) -> RequestBodies:
    bodies = RequestBodies(project)
    if bodies.problem:
        warn(bodies.problem)
    return bodies


def configure(command: str, p: argparse.ArgumentParser) -> None:
    p.description = (
        "Export the LLM calls of a store: --format lhar (context-lens, one session per file), --format otel "
        "(OpenTelemetry GenAI traces: one trace per run; written as OTLP/JSON lines, or pushed with --endpoint "
        "to an OTLP/HTTP collector such as Phoenix or Langfuse), --format svg (a screen)."
    )
    add_store_arg(p)
    add_project_arg(p, "prefix, tools")
    p.add_argument(
        "--format",
        choices=["lhar", "otel", "svg"],
        required=True,
        help="lhar: context-lens's JSON Lines; otel: OpenTelemetry GenAI spans; svg: a screen",
    )
    p.add_argument(
        "--endpoint",
        metavar="URL",
        help="with --format otel: push the spans to this OTLP/HTTP collector (protobuf, to URL/v1/traces), "
        "e.g. http://127.0.0.1:6006 (Phoenix), https://cloud.langfuse.com/api/public/otel (Langfuse)",
    )
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --endpoint: an HTTP header to send (repeatable), e.g. 'Authorization=Basic ...' for Langfuse",
    )
    p.add_argument(
        "--no-content",
        action="store_true",
        help="with --format otel: leave out prompts, answers, tool definitions, tool arguments and results",
    )
    p.add_argument("--service", default="zymi", help="with --format otel: service.name, and the Phoenix project")
    p.add_argument(
        "--follow",
        action="store_true",
        help="with --format otel: keep going, exporting new calls as they are written (Ctrl-C stops)",
    )
    p.add_argument(
        "--screen",
        choices=["dashboard", "advice", "life"],
        default="dashboard",
        help="with --format svg: the dashboard, its advice panel (A) or the message-life grid (L)",
    )
    p.add_argument("--size", default="120x40", metavar="WxH", help="with --format svg: the terminal size")
    add_runs_filter(p)
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="write there instead of stdout; with --format lhar, a folder (or several sessions) gets one .lhar "
        "file per session",
    )
    p.set_defaults(func=cmd_export)


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


def _headers(args: argparse.Namespace) -> dict[str, str]:
    out = {}
    for h in args.header:
        name, sep, value = h.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"--header {h!r}: give NAME=VALUE, e.g. 'Authorization=Basic cGs6c2s='")
        out[name.strip()] = value.strip()
    return out


def _check(args: argparse.Namespace) -> None:
    otel_only = [f for f, on in (("--endpoint", args.endpoint), ("--no-content", args.no_content),
                                 ("--follow", args.follow), ("--header", args.header)) if on]  # fmt: skip
    if otel_only and args.format != "otel":
        raise CommandError(f"{otel_only[0]} goes with --format otel")
    if args.header and not args.endpoint:
        raise CommandError("--header goes with --endpoint")
    if args.follow and args.run:
        raise CommandError("--follow exports the whole store as it grows; leave out -r")


def cmd_export(args: argparse.Namespace) -> int:
    _check(args)
    if getattr(args, "own_process", False):  # a process of its own: no caller's collector settings to keep
        gc.set_threshold(GC_THRESHOLD)
    if args.format == "svg":
        from .tuning_cmds import write_or_print  # 50 ms of imports (rich's tables, compare) no export needs

        write_or_print(_svg(args), args.output)
        return EXIT_OK
    if args.follow or args.endpoint:  # polls the store, or pushes: on an event loop
        return run_async(_otel(args, None, False))
    found = located(args)
    if args.format == "lhar":
        return run_reading(found.store, lambda inline: _lhar(args, found, inline))
    return run_reading(found.store, lambda inline: _otel(args, found, inline))


async def _opened(
    args: argparse.Namespace, found: Located | None, inline: bool
) -> tuple[EventReader, Path | None, list[str] | None, RequestBodies]:
    location, project = found or located(args)
    reader = await open_reader(location, inline=inline)
    try:
        streams = await run_step_streams(reader, args)
    except BaseException:
        await reader.close()
        raise
    return reader, project, streams, project_bodies(project)


async def _otel(args: argparse.Namespace, found: Located | None, inline: bool) -> int:
    pusher = OtlpPusher(args.endpoint, headers=_headers(args)) if args.endpoint else None  # a bad URL: said first
    out = None if pusher is not None else _open_output(args.output) if args.output else _stdout_bytes()
    try:
        reader, project, streams, bodies = await _opened(args, found, inline)
    except BaseException:
        _close(pusher, out)
        raise
    builder = trace_builder(bodies, not args.no_content)
    resource = resource_attributes(args.service)
    batcher: SpanBatcher | OtlpJsonLines
    partner: SpansPartner | None = None  # the process exporting the store's later part (otel_pair.py)
    writer: otel_writer.SpanWriter | None = None  # or the one writing one walk's spans (otel_writer.py)
    if pusher is not None:
        batcher = SpanBatcher(pusher, resource)
    else:
        assert out is not None  # without a collector, spans go to a file or stdout
        batcher = OtlpJsonLines(out, resource)
    try:
        if args.follow:
            async for se, rows in follow(reader, project, on_idle=batcher.flush):
                batcher.add(builder.feed(se, rows))
        else:
            progress = await _progress(reader, to_stdout=pusher is None and not args.output)
            ends = None  # (the walk reads them)
            if found is not None and inline and streams is None:
                ends, partner = await partner_for(
                    reader, found.store, project, content=not args.no_content, output=args.output
                )
                if partner is None and out is not None:  # one long run: the spans made and written by a child
                    from .otel_writer import span_writer  # (~2 ms of imports a small store does not need)

                    writer = span_writer(reader, found.store, project, ends, bodies, not args.no_content,
                                         args.service, out)  # fmt: skip
            hand_over = None if partner is None else partner.hand_over(builder.holds_nothing_open)
            until = None if partner is None else partner.until
            async for se, rows in walk(reader, project, streams, ends=ends, until=until, hand_over=hand_over):
                if writer is not None:
                    writer.add(se, rows)
                else:
                    batcher.add(builder.feed(se, rows))
                if se is not None and se.global_id >= progress.next_at:
                    progress.at(se.global_id)
                    progress.next_at = se.global_id + PROGRESS_EVERY
            if partner is not None and partner.taken:
                assert isinstance(batcher, OtlpJsonLines)  # (no collector: spans go to a file or stdout)
                partner.write_to(batcher)
            if writer is not None:
                batcher.spans = writer.finish()
            progress.end()
        if writer is None:
            batcher.flush()
    finally:
        if partner is not None:
            partner.close()
        if writer is not None:
            writer.close()
        await close_reader(reader)
        _close(pusher, out)
    if pusher is not None:
        common.err.print(f"pushed {pusher.spans} spans in {pusher.requests} requests to {pusher.url}")
    elif args.output:
        common.err.print(f"wrote {batcher.spans} spans to {Path(args.output).resolve()}")
    return EXIT_OK


PROGRESS_EVERY = 500  # events between two progress lines


class ExportProgress(Progress):
    """`exporting: event N/TOTAL` on stderr when it is a terminal and the export is not on it, every
    `PROGRESS_EVERY` events."""

    next_at = 0

    def end(self) -> None:
        self.at(self.total)
        super().end()


async def _progress(reader: EventReader, *, to_stdout: bool) -> ExportProgress:
    progress = ExportProgress("exporting", await reader.max_global_id())
    if not to_stdout:  # written to files or a collector: the terminal shows nothing else meanwhile
        progress.shown = progress.total >= PROGRESS_FROM and sys.stderr.isatty()
    return progress


def _close(pusher: OtlpPusher | None, out: BinaryIO | None) -> None:
    if pusher is not None:
        pusher.close()
    if out is not None:
        out.close()


WRITE_BUFFER = 1 << 20  # bytes gathered before a write to the file: a span's messages are copied there once


def _open_output(path: str) -> BinaryIO:
    try:
        return open(path, "wb", buffering=WRITE_BUFFER)  # closed by the caller once the spans are out
    except OSError as e:
        raise CommandError(f"--output {path}: cannot write ({e.strerror or e})") from None


def _stdout_bytes() -> BinaryIO:
    """stdout as a binary file with `WRITE_BUFFER` (what was printed on it so far is flushed first)."""
    sys.stdout.flush()
    return open(sys.stdout.fileno(), "wb", buffering=WRITE_BUFFER, closefd=False)


Walk = AsyncGenerator[tuple[ReplayEvent | None, list[CallContext]], None]  # (`walk`'s)


async def _lhar(args: argparse.Namespace, found: Located | None, inline: bool) -> int:
    # (loaded here, not by the other formats: ~23 ms of CPU before an otel export's first event)
    from zymi_tui.telemetry.lhar_files import LharFiles, lhar_target

    from .lhar_later import later_entries, later_hand_over
    from .lhar_pair import lhar_builder, lhar_partner

    reader, project, streams, bodies = await _opened(args, found, inline)
    partner: FilesPartner | None = None  # the process writing the later conversations' files (lhar_pair.py)
    later: LaterEntries | None = None  # or, of one conversation, its later entries (lhar_later.py)
    try:
        known = await reader.streams()
        ends = {s.stream_id: s.last_global_id for s in known}
        steps = [s for s in ends if STEP_MARK in s and (streams is None or s in streams)]
        conversations = sorted({s.split(STEP_MARK, 1)[0] for s in steps})
        target = lhar_target(args.output, len(conversations))
        builder = lhar_builder(bodies, project)
        files = LharFiles(target, builder.meta.model)
        progress = await _progress(reader, to_stdout=target.path is None)
        try:
            if found is not None and inline and streams is None and target.folder and target.path is not None:
                partner = lhar_partner(reader, found.store, project, known, target.path)
            if found is not None and inline and streams is None and partner is None:
                beside = target.path if target.folder else None if target.path is None else target.path.parent
                top = max(ends.values(), default=0)
                later = later_entries(reader, found.store, project, top, conversations, beside)
            del known  # (50,000 streams: ~6 MB)
            hand_over = None if partner is None else partner.hand_over(builder.holds_nothing_open)
            until = None if partner is None else partner.until
            cut = None if later is None else later_hand_over(later, builder, conversations[0])
            walked = walk(reader, project, streams, reuse=False, ends=ends, until=until, hand_over=hand_over)
            async with aclosing(cast(Walk, walked)):  # (left at the cut: `later`)
                async for se, rows in walked:  # (an entry has no prefix reuse)
                    if cut is not None and se is not None and se.global_id > cut.after:
                        if cut.take():
                            break
                        cut = None
                    for entry in builder.feed(se, rows):
                        files.write(entry)
                    if se is not None and se.global_id >= progress.next_at:
                        progress.at(se.global_id)
                        progress.next_at = se.global_id + PROGRESS_EVERY
        finally:
            files.close()
        if partner is not None and partner.taken:
            partner.move_into(files)
        if later is not None and later.taken:
            later.take_into(files, conversations[0])
        progress.end()
    finally:
        if partner is not None:
            partner.close()
        if later is not None:
            later.close()
        await close_reader(reader)
    if target is not None:
        common.err.print(files.summary())
    return EXIT_OK
