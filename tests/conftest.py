"""Shared fixtures: the oracle stores recorded by the real zymi engine, copied so nothing touches them."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORACLE = next(
    (p for p in (ROOT.parent / "shared" / "oracle", Path("/work/shared/oracle")) if p.is_dir()),
    ROOT.parent / "shared" / "oracle",
)
SCENARIOS = sorted(p.name for p in ORACLE.iterdir() if (p / "events.db").exists()) if ORACLE.exists() else []


def oracle_db(name: str) -> Path:
    return ORACLE / name / "events.db"


def copy_store(src: Path, dst_dir: Path) -> Path:
    """A private copy made with SQLite's backup API (safe even if the source were being written)."""
    dst = dst_dir / src.name
    dst_dir.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as s, sqlite3.connect(dst) as d:
        s.backup(d)
    return dst


@pytest.fixture
def oracle_copy(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    name = getattr(request, "param", "coding_default")
    return copy_store(oracle_db(name), tmp_path / name)


def zymi_bin() -> str | None:
    return shutil.which("zymi")


requires_oracle = pytest.mark.skipif(not SCENARIOS, reason="../shared/oracle is not present beside the project")
