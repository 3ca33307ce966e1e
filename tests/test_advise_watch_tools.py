"""The watch's per-tool figures (results' bytes as sent, their rent, each tool's first use) read off each
call's shape (`Watch._shape_tools`) equal those read off the call's materialised entries
(`RenderedContext.entries`, `context_entries`: what `zymi-tui context` shows), call by call and summed,
on the recorded scenarios and on a long run whose old texts are all dropped (read back when shown)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import zymi_tui.replay.advice.run as advice_run
from benchmarks.make_long_run import write_clones
from tests.conftest import ORACLE, SCENARIOS
from zymi_tui.context import builder as builder_module
from zymi_tui.context import layer_c
from zymi_tui.context.rendered import Shape
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.advice import advise
from zymi_tui.replay.advice.model import Finding
from zymi_tui.replay.advice.watch import OpenStream, Watch


def _figures(db: Path, project: Path | None, monkeypatch: pytest.MonkeyPatch, *, entries: bool) -> Any:
    seen: list[Any] = []

    def probe(signals: Any) -> list[Finding]:
        w: Watch = signals.watch
        seen.append((dict(w.sent_bytes), dict(w.rent), dict(w.first_use), w.total_bytes))
        return []

    with monkeypatch.context() as m:
        m.setattr(advice_run, "DETECTORS", (*advice_run.DETECTORS, probe))
        if entries:  # the oracle: every sent call's entries made, as `context` shows them
            calls: list[Any] = []
            sent = Watch._sent

            def remember(self: Watch, st: OpenStream, c: Any) -> None:
                calls.append(c.rendered)
                sent(self, st, c)

            def from_entries(self: Watch, st: OpenStream, index: int, shape: Shape, _before_c: int) -> None:
                rendered = calls[-1]
                assert rendered.shape is shape
                self._tools(st, index, rendered.entries)

            m.setattr(Watch, "_sent", remember)
            m.setattr(Watch, "_shape_tools", from_entries)

        async def run() -> None:
            async with await SqliteReader.open(db) as reader:
                await advise(reader, project)

        asyncio.run(run())
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tools_read_off_shapes_equal_the_entries(scenario: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db, project = ORACLE / scenario / "events.db", ORACLE / scenario / "project"
    shaped = _figures(db, project, monkeypatch, entries=False)
    assert shaped == _figures(db, project, monkeypatch, entries=True)


def test_tools_read_off_shapes_with_every_old_text_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "long.db"
    write_clones(db, 2_000, "coding_default")
    monkeypatch.setattr(builder_module, "HOT_ITEMS", 2)
    monkeypatch.setattr(layer_c, "DROP_MIN_BYTES", 0)
    project = ORACLE / "coding_default" / "project"
    shaped = _figures(db, project, monkeypatch, entries=False)
    assert shaped[0] and shaped[1]  # tool results counted, some in full
    assert shaped == _figures(db, project, monkeypatch, entries=True)


def test_each_call_reads_only_the_results_that_entered_its_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long run's window moves forward call by call: the watch reads each Layer C item's message
    about once per window it enters (again after a compaction or a rebuild), not once per call."""
    db = tmp_path / "long.db"
    write_clones(db, 2_000, "coding_default")
    reads: list[tuple[int, int]] = []  # (tail, index) of each message read while totalling tools
    shaping: list[Shape] = []
    shape_tools, message = Watch._shape_tools, layer_c.Item.message

    def watched(self: Watch, st: OpenStream, index: int, shape: Shape, before_c: int) -> None:
        shaping.append(shape)
        shape_tools(self, st, index, shape, before_c)
        shaping.pop()

    def read(item: layer_c.Item) -> Any:
        if shaping:
            items = shaping[-1].tail.items
            reads.append((id(shaping[-1].tail), next(j for j in range(len(items) - 1, -1, -1) if items[j] is item)))
        return message.fget(item)  # type: ignore[attr-defined]

    monkeypatch.setattr(Watch, "_shape_tools", watched)
    monkeypatch.setattr(layer_c.Item, "message", property(read))
    _figures(db, ORACLE / "coding_default" / "project", monkeypatch, entries=False)
    items = len(set(reads))
    assert items > 100  # tool results and assistants read, of many calls
    assert len(reads) <= 2 * items, (len(reads), items)
