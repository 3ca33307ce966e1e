"""`advise` keeps nothing of pass one's calls: its detectors watch them as they come (`advice.watch`), so
the calls (and their rendered contexts) alive when the detectors report do not grow with the store.

Counted by the garbage collector, not by the code under test: the live `CallContext` and
`RenderedContext` objects at the moment the detectors run, on a store of N runs and of 10N runs one
after another. Before the watch, pass one's calls were all held for the detectors (10x as many at 10N).
The advice over both stores is the same as the one-pass-per-detector figures the tests of
test_advise.py check; here only what is held is measured."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

import zymi_tui.replay.advice.run as advice_run
from zymi_tui.context.rendered import RenderedContext
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.advice import advise
from zymi_tui.replay.advice.model import Finding
from zymi_tui.replay.call_context import CallContext

from .conftest import ORACLE, cloned_runs


def _held_at_detection(db: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(calls and rendered contexts alive when the detectors run, agent calls the advice counted)."""
    seen: list[int] = []

    def probe(_signals: object) -> list[Finding]:
        gc.collect()
        seen.append(sum(isinstance(o, CallContext | RenderedContext) for o in gc.get_objects()))
        return []

    monkeypatch.setattr(advice_run, "DETECTORS", (*advice_run.DETECTORS, probe))

    async def run() -> int:
        async with await SqliteReader.open(db) as reader:
            advice = await advise(reader, ORACLE / "coding_default" / "project")
        return advice.calls

    calls = asyncio.run(run())
    assert len(seen) == 1
    return seen[0], calls


def test_pass_one_calls_are_not_held_for_the_detectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small = cloned_runs(tmp_path / "small", 2)
    large = cloned_runs(tmp_path / "large", 20)
    held_small, calls_small = _held_at_detection(small, monkeypatch)
    held_large, calls_large = _held_at_detection(large, monkeypatch)
    assert calls_large == 10 * calls_small > 0  # the stores are what they claim: 10x the calls
    assert held_large <= max(held_small, 4), (held_small, held_large, calls_large)
