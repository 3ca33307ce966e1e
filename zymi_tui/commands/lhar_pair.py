"""`export --format lhar` of a large SQLite store of many conversations into a folder, on two cores
(export_pair.py): the store is cut where no conversation (a run stream and its step streams) has events
on both sides, so each session file is written whole by one process. The partner writes the later
conversations' files into a hidden folder of its own inside the target (`.zymi-tui-lhar-part-*`) and,
last, its counts of files and entries to COUNTS_FD; once the caller takes its part (its own walk holds
nothing open at the cut: `LharBuilder.holds_nothing_open`), the files are moved into the target and the
counts added to the summary. Otherwise the hidden folder is removed and the caller goes on alone. A
move over an earlier export's file swaps the two (file_swap.py `mover`: each name holds the old file or
the whole new one at every moment, as with `os.replace`), and the old files are unlinked in the hidden
folder on several threads as it is removed (`remove_folder`). A session whose earlier file holds exactly
its bytes is not written there: that file is kept (lhar_files.py, `kept_if_same`), in either process.
A partner whose caller is gone (killed) removes its folder itself; a folder whose caller was killed
after its partner ended is removed by the next export into that folder (`remove_stale_parts`: the
folder's name holds its caller's pid, `.zymi-tui-lhar-part-PID-*`).

A move leaves the tree that writing in place leaves only when no two conversations share a file name
and every file the move replaces is a plain file a new one would be (its mode, owner, one link):
pairing is left out otherwise (`lhar_partner`).

    python -m zymi_tui.commands.lhar_pair STORE PROJECT AFTER UNTIL FOLDER COUNTS_FD CALLER_PID
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.location import SqliteStore, StoreLocation
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import EventReader, StreamInfo, run_of
from zymi_tui.file_swap import is_new_file_like, mover, new_file_mode, remove_folder
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.telemetry.lhar_body import BodyFrames
from zymi_tui.telemetry.lhar_export import ExportMeta, LharBuilder
from zymi_tui.telemetry.lhar_files import PARTS_PREFIX, LharFiles, LharTarget, file_name

from .export_pair import ORPHANED, Partner, pair_cut, run_partner, walk_part

PAIR_EVENTS_ENV = "ZYMI_TUI_LHAR_PAIR_EVENTS"  # the tests lower export_pair.PAIR_EVENTS to pair a small store
# the ids' worth of the caller's work to write a session over the file an earlier export left, which the
# partner, writing new files, does not pay: the cut moves that much towards the partner. Since the old file
# is set aside (lhar_files.py, `SetAside`: a rename, and an unlink on another thread) 8,000 files of 20 kB
# over 35 s old ones cost 111-146 us of CPU a file against 28-48 us for new files (truncated in place,
# 96 us but 13.5-17.2 s of wall, waiting on the disk): ~80-100 us, 3 ids at the partner's 28 us an id
# (it was 12 when a truncated file cost 8-27 ids). A file holding the same bytes is kept by either process
# at the same cost (lhar47): for those the 3 ids charge the caller too much (which files are kept is not
# known before the walk; left as it was)
REWRITE_EVENTS = 3


def body_frames(bodies: RequestBodies) -> BodyFrames | None:
    """A call's request body without its messages, from what it depends on but them (None: no project)."""
    if bodies.ws is None:
        return None
    return lambda pipeline, step, compaction: bodies.body([], pipeline=pipeline, step=step, compaction=compaction)


def lhar_builder(bodies: RequestBodies, project: Path | None) -> LharBuilder:
    meta = ExportMeta(bodies.model, bodies.provider, recorded_knobs(project).hard_cap_chars // 4)
    return LharBuilder(meta, body_frames(bodies))


def conversation_spans(streams: Sequence[StreamInfo]) -> dict[str, StreamInfo]:
    """Each conversation's (run stream's) events, its step streams' included, as one span of ids."""
    spans: dict[str, StreamInfo] = {}
    for s in streams:
        if not s.count:
            continue
        key = run_of(s.stream_id)
        had = spans.get(key)
        if had is not None:
            first, last = min(had.first_global_id, s.first_global_id), max(had.last_global_id, s.last_global_id)
            s = StreamInfo(key, had.count + s.count, first, last)
        spans[key] = s
    return spans


def lhar_partner(
    reader: EventReader, store: StoreLocation, project: Path | None, streams: Sequence[StreamInfo], folder: Path
) -> FilesPartner | None:
    """The process writing the session files of the store's later conversations (read from `store` by
    `reader`) into a hidden folder inside `folder`, started; None: one process writes them all
    (`pair_cut`, not a SQLite store, or a move would not leave the same tree)."""
    remove_stale_parts(folder)  # (whether it pairs or not)
    if not isinstance(store, SqliteStore):
        return None
    spans = conversation_spans(streams)
    names = {c: f"{file_name(c)}.lhar" for c in spans}
    if len({n.casefold() for n in names.values()}) < len(names):  # two sessions, one file: the last one wins
        return None
    present: set[str] = set()  # the session files an earlier export left in the folder

    def rewritten() -> dict[str, int]:  # (listed only when the store pairs)
        present.update(set(os.listdir(folder)).intersection(names.values()))
        return {c: REWRITE_EVENTS for c, n in names.items() if n in present}

    cut = pair_cut(list(spans.values()), PAIR_EVENTS_ENV, rewritten)
    if cut is None:
        return None
    after, until = cut
    later, mode = {names[c] for c, s in spans.items() if s.first_global_id > after}, new_file_mode()
    if not all(is_new_file_like(folder / n, mode, missing=True) for n in later & present):
        return None
    parts = Path(tempfile.mkdtemp(prefix=f"{PARTS_PREFIX}{os.getpid()}-", dir=folder))
    try:
        args = [str(store.path), str(project or ""), str(after), str(until), str(parts)]
        return FilesPartner(__name__, args, after, until, reader, parts)
    except BaseException:
        shutil.rmtree(parts, ignore_errors=True)
        raise


def remove_stale_parts(folder: Path) -> None:
    """Remove the hidden part folders in `folder` of an earlier export whose caller is gone: a folder of
    ours (not a link) named `.zymi-tui-lhar-part-PID-*` where no process PID runs. (A PID another
    process took since is left alone: only a dead owner is certain.)"""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(PARTS_PREFIX)]
    except OSError:
        return
    for name in names:
        pid, sep, _ = name[len(PARTS_PREFIX) :].partition("-")
        if not (sep and pid.isdigit() and int(pid) > 0) or _runs(int(pid)):
            continue
        try:
            st = (folder / name).lstat()
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
            shutil.rmtree(folder / name, ignore_errors=True)


def _runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (another user's: it runs)
        pass
    return True


class FilesPartner(Partner):
    """The process writing the session files of the store's ids (after, until] into `parts`."""

    def __init__(
        self, module: str, args: Sequence[str], after: int, until: int, reader: EventReader, parts: Path
    ) -> None:
        self.parts = parts
        super().__init__(module, args, after, until, reader)

    def move_into(self, files: LharFiles) -> None:
        """Its files moved to `files`' folder, and its counts added to `files`' summary."""
        assert files.target.path is not None  # (a folder: pairing needs one)
        self.out.seek(0)
        sessions, entries = map(int, self.out.read().split())
        with _folder_fd(self.parts) as src, _folder_fd(files.target.path) as dst:
            move = mover(src, dst)  # (the files they replace left in `parts`, removed with it by `close`)
            for name in os.listdir(src):
                move(name)
        files.add_written(sessions, entries)

    def close(self) -> None:
        """End the partner, drop its counts and its folder (emptied when its files were taken)."""
        try:
            super().close()
        finally:
            remove_folder(self.parts)  # (after a take: the files its own replaced)


@contextlib.contextmanager
def _folder_fd(folder: Path) -> Iterator[int]:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


async def _export_part(
    store: Path, project: Path | None, after: int, until: int, parts: Path, fd: int, caller: int
) -> int:
    builder = lhar_builder(RequestBodies(project), project)
    files = LharFiles(LharTarget(parts, True), builder.meta.model, parts.parent)  # (the same bytes: kept there)

    def feed(se: ReplayEvent | None, rows: list[CallContext]) -> None:
        for entry in builder.feed(se, rows):
            files.write(entry)

    try:
        status = await walk_part(store, project, after, until, caller, feed, reuse=False)
    finally:
        files.close()
    if status == ORPHANED:  # no one will take these files
        shutil.rmtree(parts, ignore_errors=True)
    else:
        with open(fd, "w") as out:
            out.write(f"{len(files.started)} {files.entries}\n")
    return status


def main(argv: list[str]) -> int:
    """The partner: the session files of ids (AFTER, UNTIL] in FOLDER, their counts on COUNTS_FD, while
    its parent is CALLER_PID."""
    store, project, after, until, parts, fd, caller = argv
    where = Path(project) if project else None
    return run_partner(_export_part(Path(store), where, int(after), int(until), Path(parts), int(fd), int(caller)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
