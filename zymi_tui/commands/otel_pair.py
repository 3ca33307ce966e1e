"""`export --format otel` of a large SQLite store of many runs on two cores: the store is cut where no
stream crosses (`store_ranges`), the caller exports the first part and a process of its own (`python -m
zymi_tui.commands.otel_pair`) the rest at the same time, its spans a line each in a temporary file that
the caller then writes in its own lines (`OtlpJsonLines.add_lines`).

The parts' spans are the spans of one walk only when the caller's walk holds nothing open at the cut
(`export_calls.HandOver`: no run, step or row of the replay, no run, step, call or tool call of the
trace builder): a run left open before it (a step that never ended, a call with no completion) is
written at the store's end, and a call waiting for its completion holds back every row after it.
Otherwise, or when the partner failed or read a row it could not decode, the caller goes on past the
cut itself and the partner's spans are dropped: the output is the one process's, byte for byte. The
partner is ended by the caller (`Partner.close`), or ends by itself once its parent is not the caller
(the machinery, shared with lhar's, is export_pair.py's).

    python -m zymi_tui.commands.otel_pair STORE PROJECT AFTER UNTIL CONTENT SPANS_FD CALLER_PID
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.location import SqliteStore, StoreLocation
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import EventReader, step_of
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_ends import LONG_STREAM, StreamEnds
from zymi_tui.telemetry.otel_spans import TraceBuilder, TraceOptions
from zymi_tui.telemetry.otlp_lines import OtlpJsonLines, SpanLines

from .export_pair import Partner, pair_cut, run_partner, spans_cut, spans_top, walk_part

PAIR_EVENTS_ENV = "ZYMI_TUI_OTEL_PAIR_EVENTS"  # the tests lower export_pair.PAIR_EVENTS to pair a small store
WRITE_BUFFER = 1 << 20  # bytes gathered before a write to the file


def row_body(bodies: RequestBodies, row: CallContext) -> dict[str, Any] | None:
    """The exact request body of a replayed call (None without a project or a rebuilt context)."""
    if row.rendered is None or bodies.ws is None:  # no project: no body (and no wire form to make)
        return None
    return bodies.body(row.rendered.wire(), pipeline=row.pipeline, step=step_of(row.stream_id),
                       compaction=row.is_compaction)  # fmt: skip


def trace_builder(bodies: RequestBodies, content: bool) -> TraceBuilder:
    options = TraceOptions(model=bodies.model, provider=bodies.provider, content=content)
    return TraceBuilder(options, lambda row: row_body(bodies, row))


async def partner_for(
    reader: EventReader, store: StoreLocation, project: Path | None, *, content: bool, output: str | None
) -> tuple[dict[str, int] | StreamEnds, SpansPartner | None]:
    """Each stream's last global id (for the walk: `stream_ends`, or from a SQLite store `StreamEnds`,
    each read when the walk asks it), and the process exporting the later part of `store` (read by
    `reader`), started, its spans kept beside the `output` file (on its file system; stdout, or not a
    plain file: in the system's temporary folder); None: one process exports it all (`pair_cut`, or not
    a SQLite store). No list of every stream is held (50,000 streams: ~9 MB with their ends)."""
    ends: dict[str, int] | StreamEnds
    if isinstance(reader, SqliteReader):
        spans, long = await reader.stream_spans(LONG_STREAM)
        top = spans_top(spans)
        ends = StreamEnds(reader.stream_end, top, long)
        cut = spans_cut(spans, PAIR_EVENTS_ENV, top=top)
        del spans
    else:
        streams = await reader.streams()
        ends = {s.stream_id: s.last_global_id for s in streams}
        cut = pair_cut(streams, PAIR_EVENTS_ENV)
    if cut is None or not isinstance(store, SqliteStore):
        return ends, None
    after, until = cut
    args = [str(store.path), str(project or ""), str(after), str(until), "1" if content else "0"]
    tmp = Path(output).resolve().parent if output is not None and Path(output).is_file() else None
    return ends, SpansPartner(__name__, args, after, until, reader, tmp)


class SpansPartner(Partner):
    """The process exporting the store's ids (after, until] as span lines to a temporary file."""

    def write_to(self, lines: OtlpJsonLines) -> None:
        self.out.seek(0)
        lines.add_lines(self.out)


async def _export_part(
    store: Path, project: Path | None, after: int, until: int, content: bool, fd: int, caller: int
) -> int:
    builder = trace_builder(RequestBodies(project), content)
    with open(fd, "wb", buffering=WRITE_BUFFER) as out:
        lines = SpanLines(out)
        return await walk_part(store, project, after, until, caller, lambda se, rows: lines.add(builder.feed(se, rows)))


def main(argv: list[str]) -> int:
    """The partner: the spans of ids (AFTER, UNTIL] as lines on SPANS_FD, while its parent is CALLER_PID."""
    store, project, after, until, content, fd, caller = argv
    where = Path(project) if project else None
    return run_partner(_export_part(Path(store), where, int(after), int(until), content == "1", int(fd), int(caller)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
