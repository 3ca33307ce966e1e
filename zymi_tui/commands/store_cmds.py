"""`zymi-tui events`: zymi's event reader, read-only and never fatal on one bad row."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime

from zymi_tui.events.factory import open_reader
from zymi_tui.events.kinds import KIND_BY_TAG, KNOWN_KINDS, snake_tag
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.raw_lines import Utf8Pages, page_lines
from zymi_tui.events.raw_pair import PairedPages, PartnerEnded, paired
from zymi_tui.events.row_envelope import LeanError, checked_stream_id, with_sequence
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.store import EventReader, RawRow, step_of
from zymi_tui.events.stored import BadRow, StoredEvent
from zymi_tui.events.tail import tail
from zymi_tui.malloc_arenas import keep_freed_blocks

from . import common
from .common import (
    EXIT_OK,
    CommandError,
    Progress,
    add_store_arg,
    close_reader,
    located,
    raw_line,
    report_skipped,
    run_async,
    run_reading,
    shown,
    warn,
)
from .flags import RUN_HELP, add_run_arg

STYLE = {
    "success": "green", "failure": "red", "warning": "yellow", "info": "cyan",
    "highlight": "magenta", "dim": "bright_black", "default": "",
}  # fmt: skip
PAGE = 2000


def _kind_tag(value: str) -> str:
    tag = value if value in KIND_BY_TAG else snake_tag(value) if value in KNOWN_KINDS else value
    if tag not in KIND_BY_TAG:
        raise CommandError(f"unknown kind `{value}`; known kinds: {', '.join(sorted(KIND_BY_TAG))}")
    return tag


def _print_human(se: StoredEvent, run_stream: str | None) -> None:
    from zymi_tui.events.describe import describe  # not loaded by `--raw`

    ev = se.event
    line = describe(ev)
    t = datetime.fromtimestamp(ev.timestamp_ns / 1e9).strftime("%H:%M:%S.%f")[:-3]
    where = f"[{step}] " if run_stream and (step := step_of(ev.stream_id)) else ""
    if not run_stream:
        where = f"{ev.stream_id} "
    style = STYLE[line.style]
    icon = f"[{style}]{line.icon}[/]" if style else line.icon
    common.out.print(
        f"[bright_black]#{se.global_id:<6}[/] {t} {'  ' * line.indent}{icon} {shown(where)}"
        f"[bold]{shown(line.label)}[/] [bright_black]seq {ev.sequence}[/]  {shown(line.detail)}"
    )


def _events(args: argparse.Namespace) -> int:
    """A listing reads a SQLite store in this thread with no event loop (`run_reading`: no asyncio, no
    reader thread to hand each page over); `--follow` waits for new rows on an event loop."""
    if args.raw:
        keep_freed_blocks()  # a page's text and lines are MBs: reused, not faulted in anew for each page
    store = located(args).store
    if args.follow:
        return run_async(_listing(args, store, inline=False))
    return run_reading(store, lambda inline: _listing(args, store, inline=inline))


async def _listing(args: argparse.Namespace, store: StoreLocation, *, inline: bool) -> int:
    reader = await open_reader(store, inline=inline)
    try:
        tag = _kind_tag(args.kind) if args.kind else None
        limit = None if args.all else args.limit
        if args.follow:
            await _follow(reader, args, tag, limit)
            return EXIT_OK
        if not args.raw:
            total = await reader.count()
            scope = f"stream {args.run} and its step streams" if args.run else "all streams"
            common.out.print(f"[bold]{shown(reader.label)}[/]: {total} event(s); {shown(scope)}"
                      + ("" if limit is None else f", first {limit}"))  # fmt: skip
        progress = Progress("listing", await reader.max_global_id() if limit is None else 0)
        cursor = 0
        if args.raw and limit is None and not tag and not args.run and isinstance(reader, SqliteReader):
            cursor = await _list_paired(reader, progress)
        listed, _ = await _list(reader, args, tag, cursor, limit, progress)
        progress.end()
        if listed == 0 and not args.raw:
            common.out.print("No events.")
        report_skipped(reader)
        return EXIT_OK
    finally:
        await close_reader(reader)


async def _list(
    reader: EventReader,
    args: argparse.Namespace,
    tag: str | None,
    cursor: int,
    limit: int | None,
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Print the matching events after `cursor` in global order, a page at a time: (listed, new cursor)."""
    listed = 0
    bytes_read = Utf8Pages.of(reader) if args.raw and not sys.stdout.isatty() else None
    while limit is None or listed < limit:
        want = PAGE if limit is None else min(PAGE, limit - listed)
        if args.raw:  # passed through as stored, with the real sequence: no event is built
            made = await bytes_read.page(cursor, want, args.run, tag) if bytes_read is not None else None
            if made is not None:
                (lines, cursor, scanned), listed = made, listed + made[2]
                _write_bytes(lines)
            else:
                rows = await reader.read_rows(cursor, want, stream_id=args.run, tag=tag)
                listed += _emit_raw(rows.rows, reader)
                cursor, scanned = rows.last_global_id, rows.rows_scanned
            if progress is not None:
                progress.at(cursor)
            if scanned < want:
                break
            continue
        if tag or args.run:
            reported = len(reader.problems)
            if tag:
                page = await reader.read_kind_page(tag, stream_id=args.run, after_global_id=cursor, limit=want)
            else:
                page = await reader.read_stream(args.run, include_steps=True, after_global_id=cursor, limit=want)
            # rows skipped on this page count as read: a short page is the end only when nothing was skipped
            skipped = [b.global_id for b in reader.problems[reported:]]
            last, scanned = max([cursor, *(se.global_id for se in page[-1:]), *skipped]), len(page) + len(skipped)
        else:
            p = await reader.read_after(cursor, want)
            page, last, scanned = p.events, p.last_global_id, p.rows_scanned
        for se in page:
            _emit(se, args)
        listed += len(page)
        cursor = last
        if progress is not None:
            progress.at(cursor)
        if scanned < want:
            break
    return listed, cursor


async def _list_paired(reader: SqliteReader, progress: Progress) -> int:
    """Every row up to the table's end as read now, listed by two processes (`raw_pair`) when the table is
    large and two cores are there: the id it reached (0 when not paired)."""
    upto = progress.total
    if not paired(upto):
        return 0
    pages = PairedPages(reader.uri, upto, PAGE)

    async def slow(after: int, upto: int) -> None:
        _emit_raw((await reader.read_range(after, upto)).rows, reader)
        sys.stdout.flush()

    try:
        await pages.run(slow, progress.at)
    except PartnerEnded as e:
        raise CommandError(f"{reader.label}: {e}; the output is cut short") from None
    finally:
        pages.close()
    return upto


async def _follow(reader: EventReader, args: argparse.Namespace, tag: str | None, limit: int | None) -> None:
    """Like `tail -f`: the newest `limit` matching events (all with --all), then each new one as it lands."""
    if getattr(reader, "snapshot", False):
        warn(f"{reader.label}: read as a snapshot (its folder is read-only): new events will not appear")
    end = await reader.max_global_id()
    if limit is not None and args.run and not tag:
        history = await reader.newest(args.run, limit, include_steps=True)
        for se in history:
            _emit(se, args)
        cursor = max([end, *(se.global_id for se in history)])
    else:
        # the matching events among the newest `limit` rows (global ids have no gaps unless rows were deleted)
        start = 0 if limit is None else max(0, end - limit)
        _, cursor = await _list(reader, args, tag, start, limit)
        cursor = max(cursor, end)
    report_skipped(reader)
    if not args.raw:
        common.out.print(
            f"[bright_black]following {shown(reader.label)}: new events appear as they land (Ctrl-C stops)[/]"
        )
    sys.stdout.flush()
    async for batch in tail(reader, cursor, poll_s=args.poll_ms / 1000):
        for se in batch:
            if _matches(se, args.run, tag):
                _emit(se, args)
        sys.stdout.flush()
        report_skipped(reader)


def _matches(se: StoredEvent, stream: str | None, tag: str | None) -> bool:
    ev = se.event
    if tag and ev.tag != tag:
        return False
    return not stream or ev.stream_id == stream or ev.stream_id.startswith(stream + ":step:")


def _emit_raw(rows: list[RawRow], reader: EventReader) -> int:
    """Write each row's stored JSON with its real sequence; a row whose envelope is unreadable is
    reported and skipped. The kind's payload is passed through unread. Returns the rows written.
    A page zymi wrote is written in one piece (`raw_lines`) where no control needs escaping."""
    if not sys.stdout.isatty():
        made = page_lines(rows)
        if made is not None:
            _write_bytes(made)
            return len(rows)
    lines = []
    for gid, stream_id, seq, data in rows:
        try:
            lines.append(with_sequence(data, checked_stream_id(data), seq))
        except LeanError as e:
            reader.problems.append(BadRow(gid, stream_id, seq, str(e)))
    if lines:
        sys.stdout.write(raw_line("\n".join(lines)) + "\n")
    return len(lines)


def _write_bytes(made: bytes) -> None:
    out = sys.stdout
    out.flush()
    binary = getattr(out, "buffer", None)  # none when stdout is a text stream in memory
    if binary is not None:
        binary.write(made)
    else:
        out.write(made.decode())


def _emit(se: StoredEvent, args: argparse.Namespace) -> None:
    if args.raw:
        sys.stdout.write(
            raw_line(json.dumps(se.event.raw_envelope(), ensure_ascii=False, separators=(",", ":"))) + "\n"
        )
    else:
        _print_human(se, args.run)


def configure(command: str, p: argparse.ArgumentParser) -> None:
    _events_args(p)


def _events_args(p: argparse.ArgumentParser) -> None:
    p.description = (
        "List a store's events in global order. `-r RUN` includes the run's step\n"
        "sub-streams (`RUN:step:*`), as zymi does. Unreadable rows are reported and\n"
        "skipped."
    )
    p.epilog = (
        "examples:\n  zymi-tui events                        first 50 events of ./.zymi/events.db\n"
        "  zymi-tui events my-project -f          follow a store another process writes\n"
        "  zymi-tui events run.db -k llm_call_started --all --raw | jq .kind.data"
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    add_store_arg(p)
    add_run_arg(p, RUN_HELP + "; its step streams (`RUN:step:*`) are included", aliases=["-s", "--stream"])
    p.add_argument("-k", "--kind", help="an event kind, as a tag (llm_call_started) or a name (LlmCallStarted)")
    lim = p.add_mutually_exclusive_group()
    lim.add_argument(
        "-l", "--limit", type=int, default=50, help="show at most N events (default 50): the first N, as zymi does"
    )
    lim.add_argument("--all", action="store_true", help="show every event")
    p.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="like tail -f: the newest N events, then each new one as another process commits it (Ctrl-C stops)",
    )
    p.add_argument("--poll-ms", type=int, default=100, help="poll interval for --follow (default 100)")
    p.add_argument("--raw", action="store_true", help="one envelope JSON per line, with the real sequence")
    p.set_defaults(func=_events)
