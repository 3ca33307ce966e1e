"""The Postgres store against a real server: zymi's schema, zymi's writes, read-only reads, the CLI."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from tests.waiting import LIMIT
from zymi_tui.events.factory import open_reader, open_writer
from zymi_tui.events.kinds import Event, ResponseReady
from zymi_tui.events.location import location_of
from zymi_tui.events.postgres_read import PostgresReader
from zymi_tui.events.postgres_write import PostgresWriter
from zymi_tui.events.store import StoreError
from zymi_tui.events.verify import verify_store

from .test_postgres_helpers import CLI, pg_url, require_server, run_cli

__all__ = ["pg_url"]  # the fixture, imported for pytest

# events/store/postgres.rs SCHEMA_SQL, column by column
ZYMI_EVENTS = [
    ("id", "bigint", "NO", "nextval('events_id_seq'::regclass)"),
    ("event_id", "text", "NO", None),
    ("stream_id", "text", "NO", None),
    ("sequence", "bigint", "NO", None),
    ("timestamp", "timestamp with time zone", "NO", None),
    ("kind_tag", "text", "NO", None),
    ("data", "text", "NO", None),
    ("correlation_id", "text", "YES", None),
    ("causation_id", "text", "YES", None),
    ("source", "text", "NO", None),
    ("prev_hash", "text", "NO", "''::text"),
    ("hash", "text", "NO", "''::text"),
]
ZYMI_HEADS = [
    ("stream_id", "text", "NO", None),
    ("last_sequence", "bigint", "NO", None),
    ("last_hash", "text", "NO", None),
]
ZYMI_INDEXES = {
    "events_pkey": "CREATE UNIQUE INDEX events_pkey ON {s}.events USING btree (id)",
    "events_event_id_key": "CREATE UNIQUE INDEX events_event_id_key ON {s}.events USING btree (event_id)",
    "idx_events_stream_seq": "CREATE UNIQUE INDEX idx_events_stream_seq ON {s}.events "
    "USING btree (stream_id, sequence)",
    "idx_events_correlation": "CREATE INDEX idx_events_correlation ON {s}.events USING btree (correlation_id)",
    "idx_events_kind": "CREATE INDEX idx_events_kind ON {s}.events USING btree (kind_tag)",
    "stream_heads_pkey": "CREATE UNIQUE INDEX stream_heads_pkey ON {s}.stream_heads USING btree (stream_id)",
}


def schema_of(url: str) -> str:
    return url.rsplit("search_path=", 1)[1]


def response(stream: str, text: str, ns: int | None = None) -> Event:
    return Event.new(stream, ResponseReady(conversation_id=stream, content=text), "test", timestamp_ns=ns)


async def test_writer_creates_zymis_schema(pg_url: str) -> None:
    writer = await PostgresWriter.open(pg_url)
    await writer.close()
    s = schema_of(pg_url)
    conn = await asyncpg.connect(pg_url)
    try:
        for table, expected in (("events", ZYMI_EVENTS), ("stream_heads", ZYMI_HEADS)):
            rows = await conn.fetch(
                "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns "
                "WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
                s, table,
            )  # fmt: skip
            assert [tuple(r) for r in rows] == expected
        idx = await conn.fetch("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1", s)
        assert {r[0]: r[1] for r in idx} == {k: v.format(s=s) for k, v in ZYMI_INDEXES.items()}
    finally:
        await conn.close()


async def test_appends_as_zymi_does(pg_url: str) -> None:
    t0 = 1_764_000_000_123_456_789  # nanoseconds: the column keeps microseconds, truncated
    async with await PostgresWriter.open(pg_url) as writer:
        stored = [await writer.append(response(f"s{i % 2}", f"m{i}", t0 + i)) for i in range(5)]
    assert [se.event.sequence for se in stored] == [1, 1, 2, 2, 3]
    assert [se.global_id for se in stored] == [1, 2, 3, 4, 5]
    conn = await asyncpg.connect(pg_url)
    try:
        rows = await conn.fetch("SELECT * FROM events ORDER BY id")
        heads = {
            r["stream_id"]: (r["last_sequence"], r["last_hash"]) for r in await conn.fetch("SELECT * FROM stream_heads")
        }
    finally:
        await conn.close()
    prev: dict[str, str] = {}
    for se, row in zip(stored, rows, strict=True):
        ev = se.event
        assert row["data"] == ev.to_json() == se.data
        assert '"sequence":0' in row["data"]
        assert (row["event_id"], row["stream_id"], row["kind_tag"], row["source"]) == (
            ev.id,
            ev.stream_id,
            "response_ready",
            "test",
        )
        assert row["timestamp"] == datetime.fromtimestamp(1_764_000_000, UTC).replace(microsecond=123456)
        # the v2 hash, spelled out from zymi's event_store.rs rather than taken from our hashchain module
        body = b"v2" + ev.id.encode() + row["sequence"].to_bytes(8, "little") + row["data"].encode()
        body += prev.get(ev.stream_id, "").encode()
        assert row["prev_hash"] == prev.get(ev.stream_id, "")
        assert row["hash"] == "v2:" + hashlib.sha256(body).hexdigest()
        prev[ev.stream_id] = row["hash"]
    assert heads == {"s0": (3, prev["s0"]), "s1": (2, prev["s1"])}


async def test_reader_is_read_only_and_creates_nothing(pg_url: str) -> None:
    with pytest.raises(StoreError, match="no `events` table"):
        await open_reader(location_of(pg_url))
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                                   "WHERE n.nspname = $1", schema_of(pg_url)) == 0  # fmt: skip
        async with await open_writer(location_of(pg_url)) as writer:
            await writer.append(response("s", "x"))
        before = await conn.fetch("SELECT * FROM events")
        reader = await open_reader(location_of(pg_url))
        assert isinstance(reader, PostgresReader)
        try:
            assert await reader.count() == 1
            assert [v.ok for v in (await verify_store(reader)).verdicts] == [True]
            with pytest.raises(StoreError, match="read-only transaction"):
                await reader._fetch("INSERT INTO stream_heads VALUES ('x', 1, 'y')")
        finally:
            await reader.close()
        assert await conn.fetch("SELECT * FROM events") == before
        assert await conn.fetchval("SELECT count(*) FROM stream_heads") == 1
    finally:
        await conn.close()


async def test_every_read_of_the_protocol(pg_url: str) -> None:
    async with await open_writer(location_of(pg_url)) as writer:
        for i in range(6):
            await writer.append(response("run" if i % 3 else "run:step:a", f"m{i}"))
        await writer.append(response("run:stepx", "not a step"))
    async with await PostgresReader.open(pg_url) as r:
        assert await r.max_global_id() == 7
        assert [(s.stream_id, s.count, s.first_global_id, s.last_global_id) for s in await r.streams()] == [
            ("run", 4, 2, 6),
            ("run:step:a", 2, 1, 4),
            ("run:stepx", 1, 7, 7),
        ]
        page = await r.read_after(2, 3)
        assert [e.global_id for e in page.events] == [3, 4, 5] and page.last_global_id == 5
        assert [e.global_id for e in await r.read_stream("run", include_steps=True)] == [1, 2, 3, 4, 5, 6]
        assert [e.event.sequence for e in await r.read_stream("run", after_global_id=2)] == [2, 3, 4]
        assert [e.global_id for e in await r.newest("run", 2)] == [5, 6]
        assert [e.global_id for e in await r.newest("run", 3, include_steps=True)] == [4, 5, 6]
        assert len(await r.read_kinds(["response_ready"], 5)) == 2
        assert [e.global_id for e in await r.read_kind_page("response_ready", stream_id="run", after_global_id=3,
                                                            limit=2)] == [4, 5]  # fmt: skip
        assert [c.sequence for c in await r.chain_rows("run:step:a")] == [1, 2]
        assert set(await r.stream_heads()) == {"run", "run:step:a", "run:stepx"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command, in a process of its own."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=LIMIT)


@pytest.mark.parametrize(
    ("make_url", "expected"),
    [
        (lambda u: u.replace("@", "x@", 1), "password authentication failed"),
        (lambda u: u.rsplit("/", 1)[0] + "/no_such_db", 'database "no_such_db" does not exist'),
        (lambda u: "postgres://zymi:s3cret-pw@127.0.0.1:1/zymi", "connection refused"),
        (lambda u: "postgres://zymi:s3cret-pw@127.0.0.1:notaport/zymi", "invalid postgres URL"),
    ],
    ids=["wrong-password", "no-database", "unreachable", "bad-url"],
)
def test_bad_connection_is_one_line_exit_2(make_url: object, expected: str) -> None:
    base = require_server()
    url = make_url(base)  # type: ignore[operator]
    password = url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    for done in (cli("events", url), run_cli("verify", url), run_cli("runs", url)):
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and "Traceback" not in done.stderr
        assert password not in done.stderr and ":***@" in done.stderr


def test_project_yml_store_from_env(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "project.yml").write_text("name: p\nstore: ${env.ZT_DATABASE_URL}\n")
    monkeypatch.delenv("ZT_DATABASE_URL", raising=False)
    done = run_cli("events", str(tmp_path))
    assert done.returncode == 2 and "ZT_DATABASE_URL" in done.stderr  # unset variable: a clear error
    monkeypatch.setenv("ZT_DATABASE_URL", pg_url)
    done = run_cli("events", str(tmp_path))
    assert done.returncode == 2 and "no `events` table" in done.stderr

    async def write() -> None:
        async with await open_writer(location_of(pg_url)) as w:
            await w.append(response("chat-1", "hello from postgres"))

    asyncio.run(write())
    done = run_cli("events", str(tmp_path), "--raw")
    assert done.returncode == 0 and '"content":"hello from postgres"' in done.stdout
    assert run_cli("verify", str(tmp_path)).returncode == 0


def test_url_with_query_password_is_redacted() -> None:
    base = require_server()
    host = base.split("@", 1)[1]
    done = run_cli("events", f"postgres://zymi@{host}?password=not-the-password")
    assert done.returncode == 2 and "not-the-password" not in done.stderr and "password=***" in done.stderr
