"""`zymi-tui verify`: every stream's hash chain, checked on the raw columns (no event is decoded)."""

from __future__ import annotations

import argparse

from zymi_tui.events.factory import copy_in_progress, open_reader
from zymi_tui.events.verify import verify_store

from .common import EXIT_FAIL, EXIT_OK, add_store_arg, close_reader, err, located, out, run_async, shown


def configure(command: str, p: argparse.ArgumentParser) -> None:
    _verify_args(p)


async def _verify(args: argparse.Namespace) -> int:
    store = located(args).store
    reader = await open_reader(store)
    try:
        report = await verify_store(reader, args.stream, thorough=args.thorough)
    finally:
        await close_reader(reader)
    copying = await copy_in_progress(store)  # its chains may hold, but it is not the whole store
    verdicts = report.verdicts  # (each made as it is reached: one pass)
    broken = total = legacy = 0
    for v in verdicts:
        total += v.verified
        legacy += v.legacy
        if v.ok:
            if args.verbose:
                extra = f" ({v.legacy} legacy, pre-hash — exempt)" if v.legacy else ""
                out.print(f"  [green]✓[/] {shown(v.stream_id)}: {v.verified}/{v.rows} events OK{extra}")
        else:
            broken += 1
            problem = shown(v.problem or "")
            if v.bad_sequence is not None:
                where = f"sequence {v.bad_sequence}"
            else:
                where = "its head" if v.bad_global_id is None else f"row {v.bad_global_id}"
            out.print(f"  [red]✗ {shown(v.stream_id)}[/]: BROKEN at {where} — {problem}")
    for line in report.damage:
        out.print(f"  [red]✗ store[/]: {shown(line)}")
    if report.damage:
        err.print(
            f"verification failed: the store itself is damaged ({len(report.damage)} finding(s) above); "
            f"{broken} of {len(verdicts)} stream(s) broken. Restore it from a copy, or try "
            "`sqlite3 FILE .recover` on a copy"
        )
        return EXIT_FAIL
    if copying is not None:
        err.print(shown(copying.describe(reader.label)))
        return EXIT_FAIL
    if broken:
        err.print(f"hash chain verification failed: {broken} of {len(verdicts)} stream(s) broken")
        return EXIT_FAIL
    legacy_note = f" ({legacy} legacy event(s) pre-hash — exempt)" if legacy else ""
    out.print(f"Verified {total} event(s) across {len(verdicts)} stream(s){legacy_note}.")
    if total == 0:
        out.print("Nothing was checked: this is a vacuous pass, not a completed verification.")
    return EXIT_OK


def _verify_args(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Walk each stream by sequence, recompute v2/v1 hashes (legacy rows are exempt), check "
        "prev_hash links, that sequences run 1, 2, 3... with no gap or repeat, and stream_heads (a deleted "
        "tail or stream is caught). Names the first bad sequence. A SQLite store is read from its table, "
        "not an index, and checked by SQLite itself (PRAGMA quick_check, and each index against the table)."
    )
    p.epilog = (
        "exit status: 0 every chain holds, 1 a chain is broken or SQLite finds the store damaged, "
        "2 the store cannot be read"
    )
    add_store_arg(p)
    p.add_argument(
        "-s",
        "--stream",
        metavar="STREAM",
        help="report this one stream only (a run or a step stream; the whole store is still scanned)",
    )
    p.add_argument(
        "--thorough",
        action="store_true",
        help="SQLite: run PRAGMA integrity_check instead of quick_check (every index entry against its row; "
        "about 5x slower)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="list every stream, not only broken ones")
    p.set_defaults(func=lambda a: run_async(_verify(a)))
