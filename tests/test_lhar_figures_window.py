"""An LHAR entry's context figures (telemetry/lhar_figures.py `ShownFigures`: each step's window of
Layer C items moved forward, with running totals per category) must equal a reference made from the
whole context as the context package lists it (`splice.context_entries` / `RenderedContext.entries`:
each message's tokens by `ContextEntry.tokens`, its category, its tool calls, its wire form read back
with `json.loads`), on every call: of synthetic tails whose windows move in the ways the stores seldom
show (a mask end passing items shown in full, a start moving, a compaction's new tail, a mask end
moving back, a simulated item going masked, a memory snapshot), and of the oracle, sample and hostile
stores, with and without their project (the test checks that windows were moved, and that items shown
in full went masked, so that the forward path is the one compared)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import ORACLE, ROOT, SCENARIOS
from tests.hostile_stores import make_store_sync
from tests.test_otel_inputs_window import MEMORY, PREFIX, _other, _tail, _turns
from tests.test_otel_shown_inputs import masked_since
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.layer_c import ASSISTANT, NotedItem
from zymi_tui.context.masking import memory_block
from zymi_tui.context.rendered import ContextEntry
from zymi_tui.context.splice import context_entries
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.messages import AssistantMessage, SystemMessage, UserMessage, to_wire
from zymi_tui.telemetry.export_calls import walk
from zymi_tui.telemetry.lhar_figures import COMPOSITION, Counted, ShownFigures, message_category, message_tool_calls

SAMPLES = ROOT / "sample_stores"
HOSTILE_STORES = ["markup", "unicode", "nul", "huge_result", "unknown_kinds", "unreadable_rows"]


def _reference(entries: list[ContextEntry]) -> dict[str, Any]:
    """The figures of a context's whole message list, each message figured on its own."""
    tokens, counts = dict.fromkeys(COMPOSITION, 0), dict.fromkeys(COMPOSITION, 0)
    for i, e in enumerate(entries):
        prompt = i == 0 and e.layer == "A" and isinstance(e.message, SystemMessage)
        category = "system_prompt" if prompt else message_category(e.message)
        tokens[category] += e.tokens
        counts[category] += 1
    return {
        "tokens": [tokens[c] for c in COMPOSITION],
        "counts": [counts[c] for c in COMPOSITION],
        "calls": [c for e in entries for c in message_tool_calls(e.message)],
        "wires": [to_wire(e.message) for e in entries],
    }


def _got(c: Counted) -> dict[str, Any]:
    assert c.wires is not None
    return {
        "tokens": c.tokens,
        "counts": c.counts,
        "calls": json.loads(f"[{', '.join(c.calls)}]"),
        "wires": [json.loads(w) for w in c.wires],
    }


def _entries(shape: Any) -> list[ContextEntry]:
    b_text = memory_block(shape.memory).text if shape.memory else ""
    mem = list(shape.memory)
    return context_entries(shape.prefix, shape.tail, shape.n, ContextKnobs(), mem, b_text, shape.cut, shape.mask_end)


def _check(calls: list[tuple[str, Any, int, int, int, bool]], memory: bool = False) -> int:
    """Each call (stream, tail, cut, mask_end, n, moved: its window is expected to be the previous one
    moved forward) figured and compared with the reference; returns how many calls were moved."""
    shown, moved = ShownFigures(wire=True), 0
    for stream, tail, cut, mask_end, n, forward in calls:
        shape: Any = SimpleNamespace(
            prefix=PREFIX, memory=MEMORY if memory else (), tail=tail, cut=cut, mask_end=mask_end, n=n
        )
        before = shown.items.streams.get(stream)
        got = shown.figures(stream, shape)
        assert _got(got) == _reference(_entries(shape)), (stream, cut, mask_end, n)
        assert (shown.items.streams[stream] is before) == forward, (stream, cut, mask_end, n)
        moved += forward
    return moved


def test_windows_moved_forward_and_walked_figure_as_the_whole_context() -> None:
    items = _turns()
    tail = _tail(items)
    compacted = _tail([_other(100, UserMessage(content="[compacted history] earlier")), *items[5:]])
    s, t = "run:step:work", "run:step:other"
    calls = [
        (s, tail, 0, 0, 3, False),  # a step's first call: walked
        (s, tail, 0, 0, 4, True),
        (t, tail, 0, 4, 6, False),  # another step's window on the same tail
        (s, tail, 0, 2, 6, True),  # the first turn's assistant and a result go masked
        (s, tail, 1, 7, 9, True),  # the start moves, the mask passes the short assistant
        (t, tail, 0, 6, 11, True),
        (s, tail, 1, 11, 11, True),  # everything masked, nothing entered
        (s, tail, 0, 3, 10, False),  # the mask end and the start moved back
        (s, compacted, 0, 2, 5, False),  # compaction: another tail
        (s, compacted, 0, 4, 7, True),
        (s, compacted, 6, 7, 7, True),  # the cut past everything shown before
    ]
    assert _check(calls) == 7
    assert _check(calls, memory=True) == 7


def test_a_simulated_item_going_masked_is_sized_again() -> None:
    """A simulated assistant's masked form is its message, but its size is cut: its tokens change."""
    summary = AssistantMessage(content="s" * 900, tool_calls=())
    simulated = NotedItem(1, summary, 900, ASSISTANT, "simulated summary", simulated=True)
    items = [_other(0, UserMessage(content="go")), simulated, *_turns()[1:4]]
    tail = _tail(items)
    s = "run:step:work"
    calls = [(s, tail, 0, 0, 3, False), (s, tail, 0, 2, 5, True)]  # item 1 goes masked
    assert tail.items[1].masked_bytes < tail.items[1].bytes
    assert _check(calls) == 1


async def _compare_store(db: Path, project: Path | None) -> tuple[int, int, int]:
    """(calls compared, calls whose window was moved, items shown in full and later masked in their
    step); asserts each call's figures."""
    shown = ShownFigures(wire=True)
    calls = moved = went_masked = 0
    full: dict[str, set[int]] = {}
    reader = await open_reader(SqliteStore(db))
    try:
        async for _se, rows in walk(reader, project):
            for row in rows:
                r = row.rendered
                if r is None or r.shape is None:
                    continue
                before = shown.items.streams.get(row.stream_id)
                got = shown.figures(row.stream_id, r.shape)
                assert _got(got) == _reference(r.entries), (db, row.stream_id, row.sequence)
                moved += shown.items.streams[row.stream_id] is before
                went_masked += masked_since(r.entries, full.setdefault(row.stream_id, set()))
                calls += 1
    finally:
        await reader.close()
    return calls, moved, went_masked


def _stores() -> list[tuple[str, Path, Path]]:
    roots = [ORACLE / s for s in SCENARIOS] + sorted(p for p in SAMPLES.iterdir() if (p / "events.db").exists())
    return [(f"{root.parent.name}/{root.name}", root / "events.db", root / "project") for root in roots]


@pytest.mark.parametrize(("name", "db", "project"), _stores(), ids=[n for n, _, _ in _stores()])
def test_recorded_stores_figure_as_their_contexts(name: str, db: Path, project: Path) -> None:
    figured = [asyncio.run(_compare_store(db, p if p is not None and p.exists() else None)) for p in (project, None)]
    assert all(calls > 0 for calls, _, _ in figured), name


def test_the_stores_move_windows_and_mask_items_shown_in_full() -> None:
    got = [asyncio.run(_compare_store(db, project)) for _, db, project in _stores()]
    assert sum(moved for _, moved, _ in got) > sum(calls for calls, _, _ in got) // 2
    assert sum(masked for _, _, masked in got) > 0


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path | None]]:
    root = tmp_path_factory.mktemp("lhar_hostile")
    return {name: make_store_sync(name, root / name) for name in HOSTILE_STORES}


@pytest.mark.parametrize("name", HOSTILE_STORES)
def test_hostile_stores_figure_as_their_contexts(name: str, hostile: dict[str, tuple[Path, Path | None]]) -> None:
    db, project = hostile[name]
    calls = [asyncio.run(_compare_store(db, p)) for p in {project, None}]
    assert sum(c for c, _, _ in calls) > 0
