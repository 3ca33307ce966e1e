"""`export --format otel` of one long run on two cores: the caller walks the store (the replay under
the recorded knobs, call by call) and a forked child builds and writes the spans (otel_spans.py,
otlp_lines.py), reading the store's events itself. Only each replayed call's `CallFacts` cross the
pipe, its input messages as numbers (`otel_rows.Numbered`), each message defined once by the event it
is (or, for a message the replay made, its JSON text): the child makes the texts (`otel_numbers`),
the answers' too, and writes the figures: the caller's replay is the longer half (long_100k, CPU per
process: caller 1.60 s and child 1.37 s when the caller wrote those; 1.48 and 1.45 s now).

A store that cuts where no stream crosses is exported in two parts instead (otel_pair.py). The child
is forked only where that is safe (`export_pair.forkable`, the reader's connection closed over the
fork), from `PAIR_EVENTS` ids, on two usable cores; it writes to the caller's output file (its own
copy of the descriptor) and, at its end, how many spans it wrote. A child that ends early makes the
export fail with one line (the file is incomplete and said to be); a caller that is gone (the pipe
closed before its end) ends the child (ORPHANED); Ctrl-C is the caller's, which ends the child.

    (forked) otel_writer.main([STORE, PROJECT, TOP, CONTENT, SERVICE, FACTS_FD, CLOSE_FD, OUT_FD, RESULT_FD,
                               CLOSE_FD2])
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.kinds import WorkflowNodeCompleted
from zymi_tui.events.location import SqliteStore, StoreLocation
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import STEP_MARK, EventReader
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_ends import StreamEnds, ends_top
from zymi_tui.telemetry.otel_numbers import NumberedTexts
from zymi_tui.telemetry.otel_rows import CallFacts, Definition, Numbered
from zymi_tui.telemetry.otel_spans import TraceBuilder, TraceOptions
from zymi_tui.telemetry.otlp_lines import OtlpJsonLines
from zymi_tui.telemetry.otlp_wire import resource_attributes

from .common import EXIT_FAIL, CommandError
from .export_pair import ORPHANED, Forked, forkable, pairs, run_partner
from .otel_pair import PAIR_EVENTS_ENV, WRITE_BUFFER, row_body

BATCH_EVENTS = 256  # events' facts sent in one write
HEADER = struct.Struct("<IB")  # a batch's length in bytes and its form (MSGPACK, PICKLE), before it
MSGPACK, PICKLE = 0, 1  # (a text msgpack cannot hold, a lone surrogate of a store's odd bytes: pickled)
PIPE_BYTES = 1 << 20  # the pipe's room asked for: the walk goes on while the child writes the last batch
# an event's part: (global id, None at the walk's end; definitions; facts; the step stream let go)
Entry = tuple[int | None, list[Definition], list[CallFacts], str | None]
_ENCODE = msgspec.msgpack.Encoder().encode
STRAYED = 5  # the child's status when the caller's facts name an event it did not read
UNWRITTEN = 6  # the child's status when a write failed (its errno told on the result pipe: `E<errno>`)


class WriterGone(CommandError):
    """The child writing the spans ended before the export did."""


class SpanWriter:
    """The forked child writing the spans of the caller's walk; `add` each event and its rows, then
    `finish` (the spans written) or `close` (the child ended)."""

    def __init__(self, reader: SqliteReader, store: Path, project: Path | None, top: int, bodies: RequestBodies,
                 content: bool, service: str, out: BinaryIO) -> None:  # fmt: skip
        self.facts = Numbered(lambda row: row_body(bodies, row), content)
        self.batch: list[Entry] = []
        out.flush()
        facts_r, facts_w = os.pipe()
        result_r, result_w = os.pipe()
        out_fd = os.dup(out.fileno())
        argv = [str(store), str(project or ""), str(top), "1" if content else "0", service,
                str(facts_r), str(facts_w), str(out_fd), str(result_w), str(result_r)]  # fmt: skip
        released = reader.released()
        assert released is not None  # (asked by `span_writer`)
        try:
            with released:
                self.proc = Forked(__name__, argv)
        finally:
            for fd in (facts_r, out_fd, result_w):
                os.close(fd)
        with contextlib.suppress(OSError, AttributeError):  # (Linux: F_SETPIPE_SZ; a smaller room elsewhere)
            fcntl.fcntl(facts_w, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self.pipe = os.fdopen(facts_w, "wb", buffering=0)
        self.result = os.fdopen(result_r, "rb")

    def add(self, se: ReplayEvent | None, rows: list[CallContext]) -> None:
        facts = self.facts
        made = [facts.facts(row) for row in rows if not row.hard_cap_failure]
        done = None
        if se is not None:
            kind = se.kind
            if type(kind) is WorkflowNodeCompleted:
                done = f"{se.stream_id}{STEP_MARK}{kind.node_id}"
                facts.forget(done)
        if made or done is not None or se is None:
            self.batch.append((None if se is None else se.global_id, facts.definitions, made, done))
            facts.definitions = []
            if len(self.batch) >= BATCH_EVENTS or se is None:
                self._send()

    def _send(self) -> None:
        try:
            data, form = _ENCODE(self.batch), MSGPACK
        except (msgspec.EncodeError, UnicodeEncodeError):
            data, form = pickle.dumps(self.batch, pickle.HIGHEST_PROTOCOL), PICKLE
        self.batch = []
        try:
            self.pipe.write(HEADER.pack(len(data), form))
            self.pipe.write(data)
        except BrokenPipeError:
            self._failed()

    def finish(self) -> int:
        """The spans the child wrote, once it ended well (else `WriterGone`, or the `OSError` of a write
        that failed there, which the command tells as it tells its own)."""
        self.pipe.close()
        if self.proc.wait() != 0:
            self._failed()
        got = self.result.read()
        if not got.strip().isdigit():
            self._failed()
        return int(got)

    def _failed(self) -> None:
        status = self.proc.wait()
        if status == UNWRITTEN:
            told = self.result.read()
            if told[:1] == b"E" and told[1:].isdigit():
                code = int(told[1:])
                raise OSError(code, os.strerror(code))
        raise WriterGone(f"the process writing the spans ended early (status {status}); what was written is incomplete",
                         EXIT_FAIL)  # fmt: skip

    def close(self) -> None:
        """End the child (at once if it is still running) and let go of the pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.pipe.close()
        self.result.close()


def span_writer(
    reader: EventReader, store: StoreLocation, project: Path | None, ends: dict[str, int] | StreamEnds,
    bodies: RequestBodies,
    content: bool, service: str, out: BinaryIO,
) -> SpanWriter | None:  # fmt: skip
    """The child writing the spans of a walk of `store` (read by `reader`) to `out`, started; None: the
    caller writes them (a store below PAIR_EVENTS ids, one core, no safe fork)."""
    top = ends_top(ends)
    if not pairs(top, PAIR_EVENTS_ENV):
        return None
    if not isinstance(store, SqliteStore) or not isinstance(reader, SqliteReader) or not forkable():
        return None
    if reader.released() is None:
        return None
    return SpanWriter(reader, store.path, project, top, bodies, content, service, out)


def _entries(fd: int) -> Iterator[Entry]:
    """The caller's entries, in order; ends early (no entry for the walk's end) when the caller is gone."""
    decode = msgspec.msgpack.Decoder(list[tuple[int | None, list[Any], list[CallFacts], str | None]]).decode
    with os.fdopen(fd, "rb") as pipe:
        while True:
            head = pipe.read(HEADER.size)
            if len(head) < HEADER.size:
                return
            size, form = HEADER.unpack(head)
            data = pipe.read(size)
            if len(data) < size:
                return
            yield from (decode(data) if form == MSGPACK else pickle.loads(data))


async def _write(store: Path, project: Path | None, top: int, content: bool, service: str, facts_fd: int,
                 out_fd: int, result_fd: int) -> int:  # fmt: skip
    bodies = RequestBodies(project)
    options = TraceOptions(model=bodies.model, provider=bodies.provider, content=content)
    builder = TraceBuilder(options, lambda row: None, step_ended=lambda stream: None)
    reader = await SqliteReader.open(store, inline=True)
    try:
        texts = NumberedTexts(builder.input_texts, reader.rows_at)
        with open(out_fd, "wb", buffering=WRITE_BUFFER) as out:
            lines = OtlpJsonLines(out, resource_attributes(service))
            status = await _spans(reader, texts, builder, lines, top, _entries(facts_fd))
        if status == 0:
            os.write(result_fd, str(lines.spans).encode())
        return status
    except OSError as e:  # a write that failed (the disk is full...): told as the caller tells its own
        if e.errno is None:
            raise
        os.write(result_fd, f"E{e.errno}".encode())
        return UNWRITTEN
    finally:
        await reader.close()


async def _spans(reader: SqliteReader, texts: NumberedTexts, builder: TraceBuilder, lines: OtlpJsonLines, top: int,
                 entries: Iterator[Entry]) -> int:  # fmt: skip
    """The spans of the store's events to `top` and of the caller's `entries`, written to `lines`: 0, or
    ORPHANED (the entries ended early: the caller is gone), STRAYED (they name an event not read here)."""
    from zymi_tui.replay.event_pages import replay_events

    entry: Any = next(entries, None)
    async for se in replay_events(reader, None):
        if se.global_id > top:
            break
        texts.seen(se)
        facts: list[CallFacts] = []
        while entry is not None and entry[0] == se.global_id:
            facts += _resolved(texts, entry)
            entry = next(entries, None)
        if entry is None:
            return ORPHANED
        if entry[0] is not None and entry[0] < se.global_id:
            return STRAYED
        lines.add(builder.feed_facts(se, facts))
    if entry is None or entry[0] is not None:
        return ORPHANED if entry is None else STRAYED
    lines.add(builder.feed_facts(None, _resolved(texts, entry)))
    lines.flush()
    return 0


def _resolved(texts: NumberedTexts, entry: Entry) -> list[CallFacts]:
    _, definitions, facts, done = entry
    texts.resolve(definitions, facts)
    if done is not None:
        texts.forget(done)
    return facts


def main(argv: list[str]) -> int:
    """The child: the spans of the walk whose facts come on FACTS_FD, written to OUT_FD."""
    store, project, top, content, service, facts_fd, close_fd, out_fd, result_fd, close_fd2 = argv
    os.close(int(close_fd))  # the caller's ends of the pipes: the facts' end is seen once the caller's closes
    os.close(int(close_fd2))
    where = Path(project) if project else None
    return run_partner(_write(Path(store), where, int(top), content == "1", service, int(facts_fd), int(out_fd),
                              int(result_fd)))  # fmt: skip
