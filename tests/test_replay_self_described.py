"""Stores written by our engine describe their own runs: replay needs no project folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from zymi_tui.commands.common import run_async
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.store_replay import replay_store

from .conftest import ROOT

SAMPLES = ROOT / "sample_stores"


async def _rows(db: Path) -> list[tuple[int | None, int | None, int | None, int | None, bool]]:
    reader = await SqliteReader.open(db)
    try:
        return [
            (r.recorded_chars, r.rendered.chars if r.rendered else None, r.recorded_message_count,
             r.rendered.message_count if r.rendered else None, r.prefix_inferred)
            async for r in replay_store(reader, project=None)
            if r.iteration > 0
        ]  # fmt: skip
    finally:
        await reader.close()


@pytest.mark.parametrize("sample", ["chat_session", "coding_long", "hard_cap"])
def test_every_recorded_call_is_rebuilt_without_the_project(sample: str, tmp_path: Path) -> None:
    db = tmp_path / "events.db"  # alone: no project.yml beside it, no .zymi folder
    shutil.copy(SAMPLES / sample / "events.db", db)
    rows = run_async(_rows(db))
    assert rows
    for recorded_chars, chars, recorded_count, count, inferred in rows:
        assert not inferred
        assert chars == recorded_chars
        assert count == recorded_count
