"""Reading stores the real engine wrote: whole, read-only, byte for byte untouched, bad rows skipped."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from zymi_tui.events.factory import open_reader
from zymi_tui.events.kinds import KIND_BY_TAG, UnknownKind
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.store import StoreError
from zymi_tui.project.locate import locate_store

from .conftest import SCENARIOS, copy_store, oracle_db, snapshot_dir


async def read_all(reader: SqliteReader, page: int = 97) -> list[int]:
    ids, cursor = [], 0
    while True:
        p = await reader.read_after(cursor, page)
        ids += [se.global_id for se in p.events]
        cursor = p.last_global_id
        if p.rows_scanned < page:
            return ids


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_oracle_store_reads_whole_and_every_kind_parses(scenario: str, tmp_path: Path) -> None:
    db = copy_store(oracle_db(scenario), tmp_path)
    con = sqlite3.connect(db)
    expected_ids = [r[0] for r in con.execute("SELECT id FROM events ORDER BY id")]
    tags = {r[0] for r in con.execute("SELECT DISTINCT kind_tag FROM events")}
    total = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.close()
    async with await SqliteReader.open(db) as reader:
        assert await reader.count() == total
        ids = await read_all(reader)
        assert ids == expected_ids
        assert reader.problems == []
        seen_tags = set()
        for stream in await reader.streams():
            for se in await reader.read_stream(stream.stream_id):
                assert not isinstance(se.event.kind, UnknownKind)
                assert se.event.stream_id == stream.stream_id
                seen_tags.add(se.event.tag)
        assert seen_tags == tags
        assert tags <= set(KIND_BY_TAG)


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_reading_leaves_a_delete_journal_store_byte_identical(scenario: str, tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "events.db"
    shutil.copyfile(oracle_db(scenario), db)  # a byte copy: the oracle files are DELETE-journal
    assert sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    before = snapshot_dir(folder)
    async with await open_reader(SqliteStore(db)) as reader:
        await read_all(reader, page=1000)
        streams = await reader.streams()
        await reader.newest(streams[0].stream_id, 5, include_steps=True)
        await reader.read_kinds(["pipeline_requested"])
        await reader.stream_heads()
        await reader.chain_rows(streams[0].stream_id)
    assert snapshot_dir(folder) == before  # same bytes, and no -journal/-wal/-shm file left behind


def test_project_folder_resolves_to_its_store(tmp_path: Path) -> None:
    (tmp_path / ".zymi").mkdir()
    db = tmp_path / ".zymi" / "events.db"
    shutil.copyfile(oracle_db(SCENARIOS[0]), db)
    assert locate_store(str(tmp_path)) == SqliteStore(db)
    assert locate_store(None, cwd=tmp_path) == SqliteStore(db)
    (tmp_path / "project.yml").write_text("name: x\nstore: sqlite:data/other.db\n")
    assert locate_store(str(tmp_path)) == SqliteStore(tmp_path / "data" / "other.db")


async def test_wal_store_with_a_live_writer(tmp_path: Path) -> None:
    """A writer holding `BEGIN IMMEDIATE` does not block us; we see its rows once committed."""
    db = copy_store(oracle_db(SCENARIOS[0]), tmp_path)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    before = writer.execute("SELECT count(*) FROM events").fetchone()[0]
    async with await SqliteReader.open(db) as reader:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source) "
            "SELECT event_id || 'x', stream_id, sequence + 1000, timestamp, kind_tag, data, source FROM events "
            "WHERE id = 1"
        )
        assert await reader.count() == before  # not blocked, and uncommitted rows are not seen
        writer.execute("COMMIT")
        assert await reader.count() == before + 1
        assert await reader.max_global_id() == writer.execute("SELECT max(id) FROM events").fetchone()[0]
    writer.close()


async def test_bad_rows_are_reported_with_their_row_id_and_skipped(tmp_path: Path) -> None:
    db = copy_store(oracle_db("memory"), tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE events SET data = substr(data, 1, 40) WHERE id = 3")  # broken JSON
    con.execute("UPDATE events SET data = replace(data, event_id, 'not-a-uuid') WHERE id = 5")
    con.execute(  # an unknown kind: read and kept, not an error
        'UPDATE events SET data = replace(data, \'"type":"WorkflowStarted"\', \'"type":"FromTheFuture"\') '
        "WHERE kind_tag = 'workflow_started'"
    )
    con.execute(  # a known kind without a required field
        "UPDATE events SET data = replace(data, '\"iteration\":', '\"iteration_\":') WHERE id = "
        "(SELECT min(id) FROM events WHERE kind_tag = 'llm_call_started')"
    )
    bad_llm = con.execute("SELECT min(id) FROM events WHERE kind_tag = 'llm_call_started'").fetchone()[0]
    con.execute(  # a timestamp that matches the form but not the calendar
        'UPDATE events SET data = replace(data, \'"timestamp":"2026-12-\', \'"timestamp":"2026-13-\') WHERE id = 9'
    )
    total = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.commit()
    con.close()
    async with await SqliteReader.open(db) as reader:
        ids = await read_all(reader, page=4)
        problems = {b.global_id: b.error for b in reader.problems}
        assert sorted(problems) == sorted([3, 5, bad_llm, 9])
        assert "invalid JSON" in problems[3]
        assert "not a UUID" in problems[5]
        assert "iteration" in problems[bad_llm]
        assert "timestamp" in problems[9]
        assert len(ids) == total - 4
        unknown = [se for se in (await reader.read_kinds(["workflow_started"])) if se.event.is_unknown]
        assert len(unknown) == 1 and unknown[0].event.type_name == "FromTheFuture"
        assert unknown[0].event.to_json() == unknown[0].data  # kept verbatim
        await read_all(reader)
        assert len(reader.problems) == 4  # a bad row is reported once, not once per read


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.write_bytes(b""), "is empty"),
        (lambda p: p.write_text("hello, not a database\n"), "not a SQLite database"),
        (lambda p: sqlite3.connect(p).execute("CREATE TABLE t (a)").connection.commit(), "no `events` table"),
        (lambda p: p.write_bytes(oracle_db("memory").read_bytes()[:20_000]), "damaged"),
        (lambda p: p.mkdir(), "is a folder"),
    ],
)
async def test_unusable_files_give_one_clear_error(make: object, says: str, tmp_path: Path) -> None:
    target = tmp_path / "events.db"
    make(target)  # type: ignore[operator]
    before = snapshot_dir(tmp_path)
    with pytest.raises(StoreError) as info:
        reader = await SqliteReader.open(target)
        await read_all(reader)  # a truncated file may only fail once the missing pages are read
    assert says in str(info.value)
    assert str(target) in str(info.value)
    assert "\n" not in str(info.value)
    assert snapshot_dir(tmp_path) == before


def _without_write_override() -> list[str]:
    """A command prefix under which a folder's permissions hold: root bypasses them unless the child process
    drops CAP_DAC_OVERRIDE (setpriv, util-linux); anyone else needs nothing."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "running as root: setpriv (util-linux) is needed to make a folder read-only for a child"
    return [setpriv, "--bounding-set=-dac_override", "--"]


async def test_wal_store_without_shm_in_a_read_only_folder(tmp_path: Path) -> None:
    """SQLite cannot create the -shm index there, so plain `mode=ro` fails; we read a snapshot."""
    src = tmp_path / "src"
    src.mkdir()
    db = src / "events.db"
    shutil.copyfile(oracle_db("memory"), db)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    total = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.close()
    assert sorted(p.name for p in src.iterdir()) == ["events.db"]
    before = snapshot_dir(src)
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from zymi_tui.events.sqlite_read import SqliteReader\n"
        "probe = Path(sys.argv[1]).with_name('probe')\n"
        "try:\n"
        "    probe.touch()\n"
        "    sys.exit('the folder is writable')\n"
        "except PermissionError:\n"
        "    pass\n"
        "async def go():\n"
        "    r = await SqliteReader.open(sys.argv[1])\n"
        "    print(await r.count(), r.snapshot)\n"
        "    await r.close()\n"
        "asyncio.run(go())\n"
    )
    src.chmod(0o555)
    try:
        run = subprocess.run(
            [*_without_write_override(), sys.executable, "-c", code, str(db)], capture_output=True, text=True
        )
    finally:
        src.chmod(0o755)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(total), "True"]
    assert snapshot_dir(src) == before


async def test_writer_creates_zymis_schema_and_reader_never_does(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    with pytest.raises(StoreError):
        await SqliteReader.open(db)
    assert not db.exists()
    async with await SqliteWriter.open(db):
        pass
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cols = [r[1] for r in con.execute("PRAGMA table_info(events)")]
    assert cols == [
        "id", "event_id", "stream_id", "sequence", "timestamp", "kind_tag", "data", "correlation_id",
        "causation_id", "source", "prev_hash", "hash",
    ]  # fmt: skip
    indexes = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    assert indexes == {"idx_events_stream_seq", "idx_events_correlation", "idx_events_kind"}


async def test_read_ahead_never_serves_a_page_that_was_not_asked_for(tmp_path: Path) -> None:
    db = copy_store(oracle_db("memory"), tmp_path)
    async with await SqliteReader.open(db) as reader:
        first = await reader.read_after(0, 10)  # a full page: the next one (after id 10) is read ahead
        assert [se.global_id for se in first.events] == list(range(1, 11))
        other = await reader.read_after(5, 10)  # a different request: the read-ahead is dropped
        assert [se.global_id for se in other.events] == list(range(6, 16))
        con = sqlite3.connect(db)  # rows committed after the read-ahead are still seen on the next pages
        con.execute(
            "INSERT INTO events (event_id, stream_id, sequence, timestamp, kind_tag, data, source) "
            "SELECT event_id || '-copy', stream_id, sequence + 1000, timestamp, kind_tag, data, source "
            "FROM events WHERE id = 1"
        )
        con.commit()
        new_id = con.execute("SELECT max(id) FROM events").fetchone()[0]
        con.close()
        ids, cursor = [], 15
        while True:
            page = await reader.read_after(cursor, 10)
            ids += [se.global_id for se in page.events]
            cursor = page.last_global_id
            if page.rows_scanned < 10:
                break
        assert ids[-1] == new_id and ids == list(range(16, new_id + 1))
