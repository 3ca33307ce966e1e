"""`zymi-tui collect` (an OTLP/HTTP receiver writing a zymi store, live) and `zymi-tui import FILE`
(OTLP/JSON or LHAR files into a zymi store): any agent that speaks OpenTelemetry GenAI, in zymi's events
(docs/telemetry-in.md)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from zymi_tui.events.factory import open_reader, open_writer
from zymi_tui.events.location import PostgresStore, SqliteStore, StoreLocation, location_of
from zymi_tui.events.store import EventWriter
from zymi_tui.project.locate import DEFAULT_DB, project_store
from zymi_tui.project.reader import is_project
from zymi_tui.telemetry.collect_server import Collector, check_binding
from zymi_tui.telemetry.import_files import import_file
from zymi_tui.telemetry.spans_store import SpanSink

from .common import DIR_HELP, EXIT_OK, CommandError, run_async

TOKEN_ENV = "ZYMI_TUI_COLLECT_TOKEN"
DEFAULT_PORT = 4318  # OTLP/HTTP's registered port


def configure(command: str, p: argparse.ArgumentParser) -> None:
    {"collect": _collect_parser, "import": _import_parser}[command](p)


def _store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-d", "--dir", metavar="DIR", help=DIR_HELP + "; the store written is its .zymi/events.db "
                   "(or project.yml's `store:`)")  # fmt: skip
    p.add_argument("--store", metavar="STORE", help="write this .db file (or postgres:// URL) instead")


def _collect_parser(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip) and write each "
        "GenAI model call, tool result and agent step into a zymi store as it arrives: `observe` tails it, and "
        "replay, the knob editor, advise and compare work on it. Point the agent's exporter at the printed "
        "endpoint; with opentelemetry-instrumentation-openai-v2 set OTEL_SEMCONV_STABILITY_OPT_IN="
        "gen_ai_latest_experimental and OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only."
    )
    p.epilog = "Ctrl-C stops it; runs still open are sealed. docs/telemetry-in.md has the mapping."
    p.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N", help=f"port (default {DEFAULT_PORT}; "
                   "0: any free port, printed)")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; any other needs a token)")
    p.add_argument("--token", help=f"require `Authorization: Bearer TOKEN` (default: ${TOKEN_ENV}, if set)")
    _store_args(p)
    p.set_defaults(func=lambda a: run_async(_collect(a)))


def _import_parser(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Read an OTLP/JSON trace file (one ExportTraceServiceRequest, or one per line) or an LHAR file "
        "(context-lens's captures) into a zymi store, mapped as `collect` maps live spans."
    )
    p.add_argument("file", metavar="FILE", help="an OTLP/JSON or LHAR (.lhar / .lhar.json) file")
    _store_args(p)
    p.set_defaults(func=lambda a: run_async(_import(a)))


def target(args: argparse.Namespace) -> StoreLocation:
    """The store to write: --store, else -d DIR's (default: the current folder's) project or zymi store."""
    if args.store:
        return location_of(args.store)
    folder = Path(args.dir).expanduser() if args.dir else Path.cwd()
    if folder.exists() and not folder.is_dir():
        raise CommandError(f"-d {folder}: not a folder")
    if is_project(folder):
        return project_store(folder)
    return SqliteStore((folder / DEFAULT_DB).resolve())


def _named(location: StoreLocation) -> str:
    if isinstance(location, SqliteStore):
        return str(location.path.resolve())
    assert isinstance(location, PostgresStore)
    return str(location)


async def _collect(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get(TOKEN_ENV) or None
    check_binding(args.host, token)  # before anything is created

    def say(line: str) -> None:
        print(f"  {line}", flush=True)

    location = target(args)
    collector = Collector(None, args.host, args.port, token, say)
    await collector.start()  # bound before the store is made: a port in use leaves nothing behind
    try:
        if isinstance(location, SqliteStore):
            location.path.parent.mkdir(parents=True, exist_ok=True)
        writer = await open_writer(location)
    except BaseException:
        await collector.stop()
        raise
    sink = collector.sink = SpanSink(writer)
    try:
        await _remember(sink, location)
        print(f"collecting OTLP/HTTP traces on {collector.endpoint}", flush=True)
        print(f"writing into {_named(location)}", flush=True)
        print(f"  export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT={collector.endpoint}", flush=True)
        stop = asyncio.Event()
        with contextlib.suppress(NotImplementedError, RuntimeError):  # SIGTERM stops it as Ctrl-C does
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(_stop(collector, sink, writer))
        print(f"stopped: {sink.stats.line()}", file=sys.stderr, flush=True)
    return EXIT_OK


async def _remember(sink: SpanSink, location: StoreLocation) -> None:
    """The calls already taken in from spans (opened after the writer: the store exists)."""
    reader = await open_reader(location)
    try:
        await sink.remember(reader)
    finally:
        await reader.close()


async def _stop(collector: Collector, sink: SpanSink, writer: EventWriter) -> None:
    await collector.stop()
    async with collector.lock:
        await sink.close()
    await writer.close()


async def _import(args: argparse.Namespace) -> int:
    path = Path(args.file).expanduser()
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    location = target(args)
    if isinstance(location, SqliteStore):
        location.path.parent.mkdir(parents=True, exist_ok=True)
    writer = await open_writer(location)
    sink = SpanSink(writer)
    try:
        await _remember(sink, location)
        fmt = await import_file(path, sink)
    finally:
        await writer.close()
    print(f"imported {path.resolve()} ({'OTLP/JSON' if fmt == 'otlp' else 'LHAR'}) into {_named(location)}")
    print(f"  {sink.stats.line()}")
    return EXIT_OK
