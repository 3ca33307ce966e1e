"""`advise` reads where the store's streams end once (`StoreEnds`: each stream's last global id, then the
completions that close their run) and carries it to its watch and to every replay of its two passes, each
of which read them again on main (the closings' query seeks every completion's correlation id: ~1.2 s
cold on a store of a million events).

Counted at the reader, from outside the code under test: its `closing_completions` and `streams` calls
during one `advise`, one process (`split` off), pass one's events kept or not (as from 500,000 events,
when pass two reads the store again). On main: two closings queries (one a pass) and three stream lists."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import zymi_tui.replay.advice.run as advice_run
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.advice import advise

from .conftest import ORACLE, cloned_runs


def _reads(db: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, int], Any]:
    counts = {"closing_completions": 0, "streams": 0}
    for name in counts:
        original = getattr(SqliteReader, name)

        async def counted(self: SqliteReader, *a: Any, _name: str = name, _original: Any = original) -> Any:
            counts[_name] += 1
            return await _original(self, *a)

        monkeypatch.setattr(SqliteReader, name, counted)

    async def run() -> Any:
        async with await SqliteReader.open(db) as reader:
            return await advise(reader, ORACLE / "coding_default" / "project")

    return counts, asyncio.run(run())


@pytest.mark.parametrize("keep", [True, False], ids=["pass one's events kept", "store read again"])
def test_the_store_ends_are_read_once_for_both_passes(
    keep: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = cloned_runs(tmp_path, 3)
    if not keep:
        monkeypatch.setattr(advice_run, "WHATIF_POOL_MIN_EVENTS", 1)
    counts, advice = _reads(db, monkeypatch)
    assert advice.tried > 0  # pass two ran: some candidate was replayed
    assert counts["closing_completions"] == 1
    assert counts["streams"] == 1
