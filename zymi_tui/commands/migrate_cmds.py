"""`zymi-tui migrate SRC DST`: copy an event store between SQLite and Postgres, row for row.

Rows are inserted as they are (ids, sequences, data, prev_hash and hash untouched; nothing is
recomputed), then `stream_heads`, so every chain verifies on the target. The copy runs in
batches, one transaction each, in id order, so an interrupted copy leaves a prefix of the source:
running the command again checks that the target holds exactly the source's rows up to its
highest id and copies only what comes after. Until the copy ends, the target holds a mark
(`events.whole_rows.COPY_MARK`) that `verify` and `runs` report: a half-copied store is never taken
for a whole one. Only the `timestamp` column changes form, as zymi's
two schemas differ: TIMESTAMPTZ (microseconds) in Postgres, RFC 3339 text in SQLite; Postgres to
SQLite writes the event's own timestamp from its data, exactly what zymi's SQLite store writes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from zymi_tui.events.factory import open_row_source, open_row_target
from zymi_tui.events.location import POSTGRES_SCHEMES, SqliteStore, StoreLocation, location_of, same_store
from zymi_tui.events.whole_rows import Head, RowSource, RowTarget
from zymi_tui.project.locate import DEFAULT_DB, locate_store, project_store
from zymi_tui.project.reader import is_project

from .common import EXIT_INTERRUPTED, EXIT_OK, CommandError, err, out, run_async, warn

BATCH = 2000


def _target_location(dst: str) -> StoreLocation:
    path = Path(dst).expanduser()
    if not dst.startswith(POSTGRES_SCHEMES) and path.is_dir() and is_project(path):
        return project_store(path)  # a project folder: the store its project.yml names, or .zymi/events.db
    if not dst.startswith(POSTGRES_SCHEMES) and path.is_dir():
        return SqliteStore(path / DEFAULT_DB)
    return location_of(dst)


async def _resume_point(src: RowSource, dst: RowTarget) -> int:
    """The target's highest id, after checking that it holds exactly the source's rows up to it."""
    top = await dst.max_id()
    if top == 0:
        return 0
    theirs, ours = await src.event_id_at(top), await dst.event_id_at(top)
    if theirs != ours or await src.count_upto(top) != await dst.count_upto(top):
        raise CommandError(
            f"{dst.label} already holds events that are not a copy of {src.label} "
            f"(row {top} differs, or the row counts up to it do): migrate into an empty store"
        )
    return top


async def _heads(src: RowSource, dst: RowTarget) -> tuple[list[Head], int]:
    """Source heads, as they are when their row was copied; for a stream the source appended to
    during the copy, the last copied link of that stream (so the target verifies)."""
    heads, moved = [], 0
    for stream_id, seq, digest in await src.heads():
        if await dst.has_link(stream_id, seq, digest):
            heads.append((stream_id, seq, digest))
        elif (link := await dst.last_link(stream_id)) is not None:
            heads.append((stream_id, *link))
            moved += 1
    return heads, moved


async def migrate(src_arg: str, dst_arg: str, batch: int) -> int:
    src_loc = locate_store(src_arg)
    dst_loc = _target_location(dst_arg)
    if same_store(src_loc, dst_loc):
        raise CommandError(f"SRC and DST are the same store ({src_loc})")
    src = await open_row_source(src_loc)
    try:
        dst = await open_row_target(dst_loc)
        try:
            return await _copy(src, dst, batch)
        finally:
            await dst.close()
    finally:
        await src.close()


async def _copy(src: RowSource, dst: RowTarget, batch: int) -> int:
    cursor = await _resume_point(src, dst)
    already = await dst.count_upto(cursor) if cursor else 0
    upto = await src.max_id()
    todo = await src.count_upto(upto) - await src.count_upto(cursor)
    copied = 0
    await dst.begin_copy(src.label, upto)
    columns = (TextColumn("[bold]migrate[/]"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task("events", total=max(todo, 0))
        while True:
            rows = await src.rows(cursor, upto, batch)
            if not rows:
                break
            await dst.insert(rows)
            cursor = int(rows[-1][0])
            copied += len(rows)
            progress.update(task, advance=len(rows))
    heads, moved = await _heads(src, dst)
    await dst.finish_copy(heads)
    if moved:
        warn(f"{moved} stream(s) grew in {src.label} during the copy: run migrate again to copy the rest")
    there = f" ({already} were already there)" if already else ""
    out.print(f"Copied {copied} event(s){there} and {len(heads)} stream head(s) from {src.label} to {dst.label}.")
    return EXIT_OK


def configure(command: str, p: argparse.ArgumentParser) -> None:
    p.description = (
        "Copy every event of SRC into DST with its id, sequence, data and hashes untouched, "
        "then the stream heads, so `verify` passes on DST. DST is a .db file (created with zymi's schema) "
        "or a postgres:// URL (tables created if missing). Re-running copies only what is not there yet."
    )
    p.add_argument("src", metavar="SRC", help="a .db file, a project folder, or a postgres:// URL")
    p.add_argument("dst", metavar="DST", help="a .db file (created if missing) or a postgres:// URL")
    p.add_argument("--batch", type=int, default=BATCH, help=f"rows per transaction (default {BATCH})")

    def run(args: argparse.Namespace) -> int:
        if args.batch < 1:
            raise CommandError(f"--batch must be at least 1, got {args.batch}")
        try:
            return run_async(migrate(args.src, args.dst, args.batch))
        except KeyboardInterrupt:  # one line, this one: the store is marked half-copied until resumed
            err.print("interrupted (Ctrl-C): what was copied is kept; run the same command again to resume")
            return EXIT_INTERRUPTED

    p.set_defaults(func=run)
