"""From a million events (as from WHATIF_POOL_MIN_EVENTS) `advise`'s pass one keeps none of its decoded
events, and on main its pass two read and decoded the store a second time (long_100k, pass one keeping
none: ~0.9 s of CPU of ~3.2). Now pass one sets its decoded events down in a temporary file
(`SpilledEvents`) and pass two replays them from it; an event the file cannot hold sends pass two to the
store again, as before.

Seen from outside the code under test: the rows the reader hands out (`read_kinds_rows`) during one
`advise`, counted, and the advice, compared with that of pass one's events kept (below the size).
On main the pass keeping none reads every row twice."""

from __future__ import annotations

import asyncio
import errno
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import zymi_tui.replay.advice.run as advice_run
from tests.conftest import ORACLE, SCENARIOS, cloned_runs, long_run_store, oracle_db
from tests.hostile_stores import make_store_sync
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.advice import advise

BIG = 2**70  # an integer msgpack cannot hold (JSON can: a free-form field may carry one)


def _advise(db: Path, project: Path | None, monkeypatch: pytest.MonkeyPatch, *, keep: bool) -> tuple[int, Any]:
    """The rows the reader handed out during one `advise` (one process), and the advice; `keep`: pass
    one's events kept (else as from WHATIF_POOL_MIN_EVENTS)."""
    rows = 0
    original = SqliteReader.read_kinds_rows

    async def counted(self: SqliteReader, *a: Any) -> Any:
        nonlocal rows
        page = await original(self, *a)
        rows += len(page.rows)
        return page

    with monkeypatch.context() as m:
        m.setattr(SqliteReader, "read_kinds_rows", counted)
        m.setattr(advice_run, "WHATIF_POOL_MIN_EVENTS", 10**9 if keep else 1)

        async def run() -> Any:
            async with await SqliteReader.open(db) as reader:
                return await advise(reader, project)

        advice = asyncio.run(run())
    return rows, advice


def _store(shape: str, tmp: Path) -> tuple[Path, Path | None]:
    if shape == "many runs":
        return cloned_runs(tmp, 3), ORACLE / "coding_default" / "project"
    return long_run_store(tmp, 3000), None


@pytest.mark.parametrize("shape", ["many runs", "one long run"])
def test_pass_two_reads_no_row_of_the_store_again(shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, project = _store(shape, tmp_path)
    rows_kept, kept = _advise(db, project, monkeypatch, keep=True)
    rows_spilled, spilled = _advise(db, project, monkeypatch, keep=False)
    assert kept.tried > 0  # pass two ran: some candidate was replayed
    assert rows_kept > 0
    assert rows_spilled == rows_kept  # one pass over the store's rows (main: two)
    assert spilled == kept


def test_an_event_the_file_cannot_hold_sends_pass_two_to_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, project = _store("many runs", tmp_path)
    with closing(sqlite3.connect(db)) as c, c:
        (gid,) = c.execute("SELECT max(id) FROM events WHERE kind_tag = 'tool_call_completed'").fetchone()
        c.execute(
            "UPDATE events SET data = replace(data, '\"data\":{', '\"data\":{\"zymi_tui\":' || ? || ',') WHERE id = ?",
            (str(BIG), gid),
        )
    rows_kept, kept = _advise(db, project, monkeypatch, keep=True)
    rows_spilled, spilled = _advise(db, project, monkeypatch, keep=False)
    assert kept.tried > 0
    assert rows_spilled == 2 * rows_kept  # the store read again by pass two
    assert spilled == kept


def test_a_disk_full_sends_pass_two_to_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file takes one page, then its disk is full (ENOSPC from the write): the advice is the same."""
    from zymi_tui.replay import spilled_events

    db, project = _store("one long run", tmp_path)
    rows_kept, kept = _advise(db, project, monkeypatch, keep=True)
    written = 0
    real = spilled_events.write_all

    def full(fd: int, data: bytes) -> None:
        nonlocal written
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written += 1
        real(fd, data)

    monkeypatch.setattr(spilled_events, "write_all", full)
    rows_spilled, spilled = _advise(db, project, monkeypatch, keep=False)
    assert written == 1
    assert rows_spilled == 2 * rows_kept  # the store read again by pass two
    assert spilled == kept


def _events(db: Path) -> list[Any]:
    from zymi_tui.replay.event_pages import replay_events

    async def run() -> list[Any]:
        async with await SqliteReader.open(db) as reader:
            return [se async for se in replay_events(reader, None)]

    return asyncio.run(run())


def _stores(tmp: Path) -> list[Path]:
    hostile = ["markup", "escapes", "unicode", "nul", "huge_result", "unknown_kinds", "long_ids"]
    return [oracle_db(name) for name in SCENARIOS] + [make_store_sync(name, tmp / name)[0] for name in hostile]


def test_every_event_comes_back_equal(tmp_path: Path) -> None:
    from zymi_tui.replay.spilled_events import SPILL_PAGE, SpilledEvents

    seen = 0
    for db in _stores(tmp_path):
        events = _events(db)
        spilled = SpilledEvents()
        try:
            for se in events:
                spilled.add(se)
            spilled.finish()
            assert not spilled.broken, db
            assert [se for page in spilled.pages() for se in page] == events, db
            for at in {0, len(events) // 2, SPILL_PAGE, len(events) - 1} & set(range(len(events))):
                after = events[at].global_id
                assert [se for page in spilled.pages(after) for se in page] == events[at + 1 :], (db, at)
        finally:
            spilled.close()
        seen += len(events)
    assert seen > 1000


def test_an_event_it_cannot_encode_leaves_it_broken(tmp_path: Path) -> None:
    from msgspec.structs import replace

    from zymi_tui.replay.spilled_events import SpilledEvents

    events = _events(oracle_db("coding_default"))
    spilled = SpilledEvents()
    try:
        for se in events[:-1]:
            spilled.add(se)
        spilled.add(replace(events[-1], kind=replace(events[-1].kind, zymi_tui={"n": BIG})))
        spilled.finish()
        assert spilled.broken
    finally:
        spilled.close()


def _file_at(spilled: Any) -> str:
    """Where the kernel says the spilled file is (an unnamed file: its folder, then `#inode (deleted)`)."""
    import os

    return os.readlink(f"/proc/self/fd/{spilled._fd}")


def test_the_file_is_made_beside_the_store_not_in_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temporary folder may be a tmpfs (memory): the file goes on the store's own disk where it can."""
    import tempfile

    from zymi_tui.events.location import SqliteStore
    from zymi_tui.replay.spilled_events import SpilledEvents

    (tmp_path / "store").mkdir()
    (tmp_path / "temp").mkdir()
    db, project = _store("one long run", tmp_path / "store")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    seen: list[str] = []
    real = SpilledEvents.pages

    def pages(self: SpilledEvents, after: int = 0) -> Any:
        seen.append(_file_at(self))
        return real(self, after)

    monkeypatch.setattr(SpilledEvents, "pages", pages)
    monkeypatch.setattr(advice_run, "WHATIF_POOL_MIN_EVENTS", 1)

    async def run() -> Any:
        async with await SqliteReader.open(db) as reader:
            return await advise(reader, project, location=SqliteStore(db), split=False)

    assert asyncio.run(run()).tried > 0
    assert seen and all(link.startswith(f"{db.parent}/") for link in seen), seen
    # a folder no file can be made in: the temporary folder's
    spilled = SpilledEvents(tmp_path / "gone")
    try:
        assert _file_at(spilled).startswith(f"{tmp_path / 'temp'}/")
    finally:
        spilled.close()
