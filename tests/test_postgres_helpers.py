"""Where the Postgres tests get a real server, and a private schema per test.

The server is the one ZYMI_TUI_TEST_PG points at; when that is unset, scripts/pg_start is tried once
(never installing anything: PG_NO_INSTALL=1) into a private state dir, and stopped when the tests
end. When neither works, every Postgres test skips with the reason, and the rest of the suite runs.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import io
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests import leftovers
from tests.conftest import NO_POSTGRES

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "zymi_tui.cli"]
_server: dict[str, str | None] = {}


def _start_server() -> tuple[str | None, str]:
    state = tempfile.mkdtemp(prefix="zymi-tui-pg-tests-")
    env = {**os.environ, "PG_NO_INSTALL": "1", "ZYMI_TUI_PG_STATE": state}
    try:
        done = subprocess.run(
            [str(ROOT / "scripts" / "pg_start")], env=env, capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        shutil.rmtree(state, ignore_errors=True)
        return None, f"scripts/pg_start failed: {e}"
    if done.returncode != 0:
        shutil.rmtree(state, ignore_errors=True)
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"scripts/pg_start could not start a server: {last}"
    stop = functools.cache(lambda: subprocess.run([str(ROOT / "scripts" / "pg_stop")], env=env, capture_output=True))
    leftovers.at_session_end(stop)  # before the session's leftover check
    leftovers.spare("postgres")  # started by a test, it serves the whole session
    atexit.register(stop)  # a run outside pytest's session (once: the cache)
    url = done.stdout.strip().split("=", 1)[1].strip("'")
    return url, ""


def server_url() -> str | None:
    """The test server's URL (started once per test process), or None."""
    if "url" not in _server:
        url = os.environ.get("ZYMI_TUI_TEST_PG")
        reason = ""
        if not url:
            url, reason = _start_server()
        _server["url"], _server["reason"] = url, reason
    return _server["url"]


def require_server() -> str:
    url = server_url()
    if not url:
        pytest.skip(f"{NO_POSTGRES}: ZYMI_TUI_TEST_PG is unset and {_server['reason']}")
    return url


def with_schema(url: str, schema: str) -> str:
    """The URL with every table lookup in `schema` (asyncpg passes unknown parameters as settings)."""
    return f"{url}{'&' if '?' in url else '?'}search_path={schema}"


async def _ddl(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def make_schema(url: str) -> tuple[str, str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    asyncio.run(_ddl(url, f"CREATE SCHEMA {schema}"))
    return schema, with_schema(url, schema)


def drop_schema(url: str, schema: str) -> None:
    asyncio.run(_ddl(url, f"DROP SCHEMA IF EXISTS {schema} CASCADE"))


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL to an empty private schema on the test server (dropped afterwards)."""
    base = require_server()
    schema, url = make_schema(base)
    try:
        yield url
    finally:
        drop_schema(base, schema)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`zymi-tui ARGS` in this process (the console script is `sys.exit(main())`): code, stdout, stderr."""
    from zymi_tui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
