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
partner is ended by the caller (`Partner.close`), or ends by itself once its parent is not the caller.

    python -m zymi_tui.commands.otel_pair STORE PROJECT AFTER UNTIL CONTENT SPANS_FD CALLER_PID
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zymi_tui import GC_THRESHOLD
from zymi_tui.cores import usable_cores
from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.location import SqliteStore, StoreLocation
from zymi_tui.events.store import EventReader, StreamInfo, step_of
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_ranges import store_ranges
from zymi_tui.telemetry.export_calls import HandOver, walk
from zymi_tui.telemetry.otel_spans import TraceBuilder, TraceOptions
from zymi_tui.telemetry.otlp_lines import OtlpJsonLines, SpanLines

PAIR_EVENTS = 20_000  # a store whose ids reach this is exported by two processes (below, a process costs more)
DECLINED = 3  # the partner's status when it skipped an unreadable row: the caller exports that part itself
ORPHANED = 4  # the partner's status when it found its caller gone
CALLER_LOOKS = 2_000  # events between two looks of the partner at its caller
WRITE_BUFFER = 1 << 20  # bytes gathered before a write to the file


def pair_events() -> int:
    """PAIR_EVENTS, or ZYMI_TUI_OTEL_PAIR_EVENTS (the tests lower it to pair a small store)."""
    return int(os.environ.get("ZYMI_TUI_OTEL_PAIR_EVENTS", PAIR_EVENTS))


def row_body(bodies: RequestBodies, row: CallContext) -> dict[str, Any] | None:
    """The exact request body of a replayed call (None without a project or a rebuilt context)."""
    if row.rendered is None or bodies.ws is None:  # no project: no body (and no wire form to make)
        return None
    return bodies.body(row.rendered.wire(), pipeline=row.pipeline, step=step_of(row.stream_id),
                       compaction=row.is_compaction)  # fmt: skip


def trace_builder(bodies: RequestBodies, content: bool) -> TraceBuilder:
    options = TraceOptions(model=bodies.model, provider=bodies.provider, content=content)
    return TraceBuilder(options, lambda row: row_body(bodies, row))


def pair_cut(streams: Sequence[StreamInfo]) -> tuple[int, int] | None:
    """(cut, last id): where a store of these `streams` is cut in two for two processes, and the last id
    the walk reads; None when one process exports it (a small store, one core, or no place where no
    stream crosses)."""
    top = max((s.last_global_id for s in streams if s.count), default=0)
    if top < max(pair_events(), 2) or usable_cores() < 2:
        return None
    ranges = store_ranges(streams, 2)
    return (ranges[0][1], top) if len(ranges) > 1 else None


async def partner_for(
    reader: EventReader, store: StoreLocation, project: Path | None, *, content: bool
) -> tuple[dict[str, int], Partner | None]:
    """Each stream's last global id (`stream_ends`, for the walk), and the process exporting the later
    part of `store` (read by `reader`), started; None: one process exports it all (`pair_cut`, or not a
    SQLite store). The streams' list is let go here (50,000 streams: ~6 MB)."""
    streams = await reader.streams()
    ends = {s.stream_id: s.last_global_id for s in streams}
    cut = pair_cut(streams)
    if cut is None or not isinstance(store, SqliteStore):
        return ends, None
    return ends, Partner(store.path, project, *cut, content=content)


class Partner:
    """The process exporting the store's ids (after, until] as span lines to a temporary file."""

    def __init__(self, store: Path, project: Path | None, after: int, until: int, *, content: bool) -> None:
        self.after, self.until = after, until
        self.taken = False  # its spans are the rest of the output
        self.spans = tempfile.TemporaryFile(prefix="zymi-tui-otel-")  # noqa: SIM115 (closed by `close`)
        fd = self.spans.fileno()
        argv = [str(store), str(project or ""), str(after), str(until), "1" if content else "0", str(fd)]
        argv.append(str(os.getpid()))  # the caller: the partner stops once its parent is another
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", __name__, *argv],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # a failure is the caller's to meet again, going on itself
                pass_fds=(fd,),
                start_new_session=True,  # Ctrl-C is the caller's to handle: it ends this process
            )
        except BaseException:
            self.spans.close()
            raise

    def hand_over(self, holds_nothing_open: Callable[[], bool]) -> HandOver:
        """The caller's walk ends at the cut when its trace builder `holds_nothing_open` there and the
        partner wrote every span of its part (then `taken`)."""

        def take() -> bool:
            self.taken = holds_nothing_open() and self.proc.wait() == 0
            if not self.taken:  # the caller goes on alone: the core is its own again
                self._end()
            return self.taken

        return HandOver(self.after, take)

    def write_to(self, lines: OtlpJsonLines) -> None:
        self.spans.seek(0)
        lines.add_lines(self.spans)

    def close(self) -> None:
        """End the partner (at once if it is still running) and drop its file."""
        self._end()
        self.spans.close()

    def _end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


async def _export_part(
    store: Path, project: Path | None, after: int, until: int, content: bool, fd: int, caller: int
) -> int:
    from zymi_tui.events.sqlite_read import SqliteReader

    reader = await SqliteReader.open(store, inline=True)
    try:
        builder = trace_builder(RequestBodies(project), content)
        with open(fd, "wb", buffering=WRITE_BUFFER) as out:
            lines = SpanLines(out)
            look_at = after
            async for se, rows in walk(reader, project, after=after, until=until):
                lines.add(builder.feed(se, rows))
                if se is not None and se.global_id >= look_at:
                    if os.getppid() != caller:  # the caller ended (killed): no one will read these spans
                        return ORPHANED
                    look_at = se.global_id + CALLER_LOOKS
    finally:
        await reader.close()
    return DECLINED if reader.problems else 0


def main(argv: list[str]) -> int:
    """The partner: the spans of ids (AFTER, UNTIL] as lines on SPANS_FD, while its parent is CALLER_PID."""
    from zymi_tui.events.sqlite_inline import run_inline

    gc.set_threshold(GC_THRESHOLD)
    store, project, after, until, content, fd, caller = argv
    where = Path(project) if project else None
    part = _export_part(Path(store), where, int(after), int(until), content == "1", int(fd), int(caller))
    with contextlib.suppress(KeyboardInterrupt):
        return run_inline(part)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
