"""`export --format lhar` of a store of one conversation (one long run) on two cores: the store has no
place where no conversation crosses (lhar_pair.py's cut), so the entries are cut instead. An entry is
made at the event that completes its call, and both processes replay the whole store up to where they
stop (a replay cannot start in the middle of a run); the caller makes the entries of the events up to
`LATER_CUT` of the ids and stops there, the partner (`LaterEntries`) replays from the start, counting the
entries before the cut without making them (`LharBuilder.feed(quiet=True)`), and makes those after it
into a file of its own, which the caller appends to the session's. The partner replays more and makes
fewer: the cut balances the two (long_100k: the replay ~45% of one process's CPU, the entries the rest).

The caller takes the partner's entries when it made the session's first entry itself (its file holds
the session line) and the partner ended with status 0 (it read every row); otherwise the partner is
ended and the caller goes on past the cut, so the output is always the one process's.

    python -m zymi_tui.commands.lhar_later STORE PROJECT CUT UNTIL OUT_FD CALLER_PID
"""

from __future__ import annotations

import sys
from pathlib import Path

from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.location import SqliteStore, StoreLocation
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import EventReader
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.export_calls import HandOver
from zymi_tui.telemetry.lhar_export import LharBuilder
from zymi_tui.telemetry.lhar_files import LharFiles

from .export_pair import Partner, pairs, run_partner, walk_part
from .lhar_pair import PAIR_EVENTS_ENV, lhar_builder

LATER_CUT = 0.6  # the share of the ids whose entries the caller makes (long_100k, long_1m: ends alike)


class LaterEntries(Partner):
    """The process making the entries of the events after `after` (to `until`) of a store of one
    conversation, into its file `out`."""

    def take_into(self, files: LharFiles, conversation: str) -> None:
        """Its entries appended to `conversation`'s file (its count added to `files`' summary)."""
        self.out.seek(0)
        files.append(conversation, self.out)


def later_entries(
    reader: EventReader,
    store: StoreLocation,
    project: Path | None,
    top: int,
    conversations: list[str],
    beside: Path | None,
) -> LaterEntries | None:
    """The process making the later entries of a store of one conversation (its last id `top`), started,
    its file in folder `beside` (None: the system's temporary folder); None: one process makes them all
    (not one conversation, not a SQLite store, a small store, one core)."""
    if len(conversations) != 1 or not isinstance(store, SqliteStore):
        return None
    if not pairs(top, PAIR_EVENTS_ENV):
        return None
    cut = int(top * LATER_CUT)
    args = [str(store.path), str(project or ""), str(cut), str(top)]
    return LaterEntries(__name__, args, cut, top, reader, beside)


def later_hand_over(partner: LaterEntries, builder: LharBuilder, conversation: str) -> HandOver:
    """The caller's walk ends at the cut when it made the session's first entry and the partner made
    every entry after it."""
    return partner.hand_over(lambda: conversation in builder.sequence)


async def _export_part(store: Path, project: Path | None, cut: int, until: int, fd: int, caller: int) -> int:
    builder = lhar_builder(RequestBodies(project), project)
    quiet = True
    with open(fd, "wb", buffering=1 << 20) as out:

        def feed(se: ReplayEvent | None, rows: list[CallContext]) -> None:
            nonlocal quiet
            if quiet and (se is None or se.global_id > cut):
                quiet = False
                builder.later_from()
            for entry in builder.feed(se, rows, quiet=quiet):
                out.write(entry.line)

        return await walk_part(store, project, 0, until, caller, feed, reuse=False)


def main(argv: list[str]) -> int:
    """The partner: the entries of the events after CUT (to UNTIL) on OUT_FD, while its parent is CALLER_PID."""
    store, project, cut, until, fd, caller = argv
    where = Path(project) if project else None
    return run_partner(_export_part(Path(store), where, int(cut), int(until), int(fd), int(caller)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
