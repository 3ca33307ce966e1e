"""`advise` keeps nothing of pass one's calls: its detectors watch them as they come (`advice.watch`), so
the calls (and their rendered contexts) alive when the detectors report do not grow with the store.

Counted by the garbage collector, not by the code under test: the live `CallContext` and
`RenderedContext` objects (and, on the pool's path, `CallFigure`) at the moment the detectors run, on a
store of N runs and of 10N runs one after another. Before the watch, pass one's calls were all held for
the detectors, and its figures for compare's calibration (10x as many at 10N). What the advice says is
checked by test_advise.py and test_whatif_ranges.py; here only what is held is measured."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

import zymi_tui.replay.advice.run as advice_run
from zymi_tui.context.rendered import RenderedContext
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.advice import advise
from zymi_tui.replay.advice.model import Finding
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.figures import CallFigure

from .conftest import ORACLE, cloned_runs


def _held_at_detection(
    db: Path, monkeypatch: pytest.MonkeyPatch, held: tuple[type, ...], workers: int | None = None
) -> tuple[int, int]:
    """(objects of the `held` types alive when the detectors run, agent calls the advice counted)."""
    seen: list[int] = []

    def probe(_signals: object) -> list[Finding]:
        gc.collect()
        seen.append(sum(isinstance(o, held) for o in gc.get_objects()))
        return []

    monkeypatch.setattr(advice_run, "DETECTORS", (*advice_run.DETECTORS, probe))
    location = SqliteStore(db) if workers else None

    async def run() -> int:
        async with await SqliteReader.open(db) as reader:
            advice = await advise(reader, ORACLE / "coding_default" / "project", location=location, workers=workers)
        return advice.calls

    calls = asyncio.run(run())
    assert len(seen) == 1
    return seen[0], calls


def _stores(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    return cloned_runs(tmp_path / "small", 2), cloned_runs(tmp_path / "large", 20)


def test_pass_one_calls_are_not_held_for_the_detectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = _stores(tmp_path)
    held = (CallContext, RenderedContext)
    held_small, calls_small = _held_at_detection(small, monkeypatch, held)
    held_large, calls_large = _held_at_detection(large, monkeypatch, held)
    assert calls_large == 10 * calls_small > 0  # the stores are what they claim: 10x the calls
    assert held_large <= max(held_small, 4), (held_small, held_large, calls_large)


def test_on_the_pool_path_pass_one_holds_no_figures_either(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the pool's path (the store's location and workers: by default from 500,000 events) pass one
    keeps nothing per call: not the calls, and not their figures (`CallFigure`) for a calibration at
    its end; below it the figures are kept, with the decoded events, for pass two in this process."""
    small, large = _stores(tmp_path)
    held = (CallContext, RenderedContext, CallFigure)
    held_small, calls_small = _held_at_detection(small, monkeypatch, held, workers=2)
    held_large, calls_large = _held_at_detection(large, monkeypatch, held, workers=2)
    assert calls_large == 10 * calls_small > 0
    assert held_large <= max(held_small, 4), (held_small, held_large, calls_large)
