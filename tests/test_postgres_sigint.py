"""Ctrl-C at points spread over a `run` on a Postgres store: the writer's transaction completes or rolls
back, the run is sealed, the store verifies (the SQLite sweep is tests/test_engine_sigint_sweep.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg

from tests.conftest import zymi_tui_bin
from tests.test_engine_sigint_sweep import _check_run_like, _interrupt, _project, llm_port
from tests.test_postgres_helpers import pg_url, run_cli

__all__ = ["llm_port", "pg_url"]
POINTS = 10


async def _fetch(url: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


def _rows(url: str) -> list[tuple[str, str, str]]:
    try:
        got = asyncio.run(_fetch(url, "SELECT stream_id, kind_tag, data FROM events ORDER BY id"))
    except asyncpg.UndefinedTableError:
        return []
    return [(r[0], r[1], r[2]) for r in got]


def _count(url: str) -> int:
    try:
        return int(asyncio.run(_fetch(url, "SELECT COUNT(*) FROM events"))[0][0])
    except asyncpg.UndefinedTableError:
        return 0


def _on_postgres(root: Path, url: str) -> Path:
    (root / "project.yml").write_text((root / "project.yml").read_text(encoding="utf-8") + f"store: {url}\n")
    return root


def test_sigint_during_a_run_on_postgres_leaves_it_sealed(llm_port: int, pg_url: str, tmp_path: Path) -> None:
    user_password = pg_url.split("//", 1)[1].split("@", 1)[0]
    shown = pg_url.replace(user_password, user_password.split(":")[0] + ":***")  # the password is never printed
    whole = _on_postgres(_project(tmp_path / "whole", llm_port), pg_url)
    done = run_cli("run", "p", "-i", "task=go", "-d", str(whole))
    assert done.returncode == 0, done.stderr
    total = _count(pg_url)
    cut = 0
    for n in range(POINTS):  # one run at a time: its k-th row is counted in the shared store
        root = _on_postgres(_project(tmp_path / f"run{n}", llm_port), pg_url)
        before = _count(pg_url)
        k = 1 + round(n * (total - 5) / (POINTS - 1))
        trial = _interrupt(
            f"pg-run@{k}",
            root,
            [zymi_tui_bin(), "run", "p", "-i", "task=go"],
            ready="Pipeline: p",
            rows=before + k,
            pause=0.002 * (n % 3),
            count=lambda: _count(pg_url),
        )
        rows = _rows(pg_url)
        streams = list(dict.fromkeys(s for s, _, _ in rows[before:] if ":step:" not in s))
        assert len(streams) == 1, (trial.label, trial.stderr)
        cut += _check_run_like(trial, streams[0], shown, rows)
    assert cut >= POINTS - 2  # the points fall inside the runs
    verify = run_cli("verify", pg_url)
    assert verify.returncode == 0, verify.stdout + verify.stderr
