"""zymi's Postgres schema (its DDL verbatim), made once by concurrent first writers; the connection pools
that open a store (read-only, or sure of the schema) and their errors in one line without the password;
the TIMESTAMPTZ column as zymi writes it."""

from __future__ import annotations

import contextlib
import json
import socket
import urllib.parse
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg

from zymi_tui.events.location import redact_url
from zymi_tui.events.store import StoreError
from zymi_tui.events.timestamps import format_timestamp, parse_timestamp_ns

# zymi's DDL (events/store/postgres.rs SCHEMA_SQL), statement for statement, one to a line: unlike
# SQLite's `sqlite_master`, Postgres keeps no statement text, so only the statements must match.
SCHEMA = """
    CREATE TABLE IF NOT EXISTS events (
        id BIGSERIAL PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, stream_id TEXT NOT NULL,
        sequence BIGINT NOT NULL, timestamp TIMESTAMPTZ NOT NULL, kind_tag TEXT NOT NULL, data TEXT NOT NULL,
        correlation_id TEXT, causation_id TEXT, source TEXT NOT NULL,
        prev_hash TEXT NOT NULL DEFAULT '', hash TEXT NOT NULL DEFAULT ''
    );
    CREATE UNIQUE INDEX IF NOT EXISTS idx_events_stream_seq ON events(stream_id, sequence);
    CREATE INDEX IF NOT EXISTS idx_events_correlation ON events(correlation_id);
    CREATE INDEX IF NOT EXISTS idx_events_kind ON events(kind_tag);
    CREATE TABLE IF NOT EXISTS stream_heads (
        stream_id TEXT PRIMARY KEY, last_sequence BIGINT NOT NULL, last_hash TEXT NOT NULL
    );
"""
SCHEMA_OBJECTS = ("events", "stream_heads", "idx_events_stream_seq", "idx_events_correlation", "idx_events_kind")

CONNECT_TIMEOUT_S = 10.0

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def column_time(timestamp_ns: int) -> datetime:
    """The TIMESTAMPTZ value zymi stores: microseconds, truncated (chrono -> postgres-types)."""
    return _EPOCH + timedelta(microseconds=timestamp_ns // 1000)


def sqlite_column_time(data: str, value: datetime) -> str:
    """The SQLite `timestamp` column for a Postgres row: the event's own timestamp in `+00:00` form,
    as zymi's SQLite store writes it (the TIMESTAMPTZ has lost the nanoseconds)."""
    try:
        stamp = json.loads(data)["timestamp"]
        return format_timestamp(parse_timestamp_ns(stamp), zulu=False)
    except (ValueError, KeyError, TypeError, IndexError):
        delta = value - _EPOCH
        return format_timestamp((delta // timedelta(microseconds=1)) * 1000, zulu=False)


def check_url(url: str) -> None:
    """A URL Python's parser rejects (a port past 65535, an unclosed IPv6 bracket), as one line."""
    where = redact_url(url)
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as e:
        if "IPv6" in str(e):
            raise StoreError(f"invalid postgres URL {where}: a `[` in the host is not closed (IPv6: [::1])") from None
        raise StoreError(f"invalid postgres URL {where}: {e}") from None
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise StoreError(f"invalid postgres URL {where}: the port must be a number from 1 to 65535")


def _scrub(url: str, text: str) -> str:
    try:
        password = urllib.parse.urlsplit(url).password
    except ValueError:
        return text
    if password:
        for secret in {password, urllib.parse.unquote(password)}:
            text = text.replace(secret, "***")
    return text


def explain_pg_error(url: str, err: BaseException) -> StoreError:
    """One line that says what went wrong with the server, never showing the password."""
    where = redact_url(url)
    text = _scrub(url, str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__)
    if isinstance(err, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError):
        msg = f"cannot connect to {where}: {text} (check the user and password in the URL)"
    elif isinstance(err, asyncpg.InvalidCatalogNameError):
        msg = f"cannot connect to {where}: {text} (create it, or fix the database name in the URL)"
    elif isinstance(err, socket.gaierror):
        msg = f"cannot connect to {where}: unknown host ({text})"
    elif isinstance(err, ConnectionRefusedError):
        msg = f"cannot connect to {where}: connection refused (is PostgreSQL running and listening there?)"
    elif isinstance(err, TimeoutError):
        msg = f"cannot connect to {where}: no answer within {CONNECT_TIMEOUT_S:g} s (check the host and port)"
    elif isinstance(err, OSError):
        msg = f"cannot connect to {where}: {text}"
    elif isinstance(err, ValueError | asyncpg.ClientConfigurationError):
        msg = f"invalid postgres URL {where}: {text}"
    elif isinstance(err, asyncpg.PostgresError):
        msg = f"{where}: PostgreSQL error: {text}"
    else:
        msg = f"{where}: {type(err).__name__}: {text}"
    return StoreError(msg)


_CONNECT_ERRORS = (OSError, TimeoutError, ValueError, asyncpg.PostgresError, asyncpg.InterfaceError)


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Nothing to reset when a connection goes back to the pool: we never change session state
    (no SET, no session-level advisory lock, no LISTEN), so asyncpg's reset round trip is skipped."""


async def connect_pool(url: str, *, read_only: bool, max_size: int) -> asyncpg.Pool:
    """A small pool; read-only pools make every transaction read-only on the server side."""
    check_url(url)
    settings = {"application_name": "zymi-tui"}
    if read_only:
        settings["default_transaction_read_only"] = "on"
    try:
        pool = await asyncpg.create_pool(
            url, min_size=1, max_size=max_size, timeout=CONNECT_TIMEOUT_S, server_settings=settings,
            reset=_keep_session,
        )  # fmt: skip
    except _CONNECT_ERRORS as e:
        raise explain_pg_error(url, e) from None
    assert pool is not None
    return pool


async def schema_present(conn: asyncpg.Connection) -> set[str]:
    rows = await conn.fetch("SELECT name FROM unnest($1::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
                            list(SCHEMA_OBJECTS))  # fmt: skip
    return {r[0] for r in rows}


async def ensure_schema(conn: asyncpg.Connection) -> None:
    """zymi's DDL when anything is missing, serialised so that concurrent first writers do not race."""
    if await schema_present(conn) == set(SCHEMA_OBJECTS):
        return
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('zymi-tui schema', 0))")
        await conn.execute(SCHEMA)


@contextlib.asynccontextmanager
async def first_connection(pool: asyncpg.Pool, url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection of a new `pool`, to check the store with; on any failure the pool is closed (and a
    server error worded for a person)."""
    try:
        async with pool.acquire() as conn:
            yield conn
    except asyncpg.PostgresError as e:
        await pool.close()
        raise explain_pg_error(url, e) from None
    except BaseException:
        await pool.close()
        raise


async def schema_pool(url: str, *, max_size: int) -> asyncpg.Pool:
    """A read-write pool on a store whose schema `ensure_schema` has made sure of (closed on failure)."""
    pool = await connect_pool(url, read_only=False, max_size=max_size)
    async with first_connection(pool, url) as conn:
        await ensure_schema(conn)
    return pool
