"""A long run's kinds (read after its ids, `read_kinds`) are asked of the store a chunk of ids at a time and kept
a byte an id (`KindCodes`), not as one dict of every id (~100 MB at a million events: issue 34's dashboard peak
RSS on one long run). Driven by keys at 80x24 and 120x40, against SQL's kind column."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from tests.conftest import copy_store, long_run_store
from tests.tui_support import make_app, settle, sql
from tests.waiting import pilot_until
from zymi_tui.tui.dashboard.loaders import DashboardLoaders
from zymi_tui.tui.dashboard.results import DashboardResults
from zymi_tui.tui.messages import RunKinds
from zymi_tui.tui.model import RunKey
from zymi_tui.tui.state.kind_codes import KindCodes
from zymi_tui.tui.state.run_index import RunIndex

EVENTS = 60_000
CHUNK = 5_000  # ids a kinds read asks at a time (KINDS_CHUNK, lowered: 12 chunks)
LLM_TAGS = {"llm_call_started", "llm_call_completed", "llm_call_failed", "context_compacted"}  # "LLM calls" (t)


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return long_run_store(tmp_path_factory.mktemp("long"), EVENTS)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_long_runs_kinds_are_held_a_byte_an_id(
    size: tuple[int, int], long_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZYMI_TUI_SPARSE_EVENTS", "1000")
    monkeypatch.setattr("zymi_tui.tui.dashboard.loaders.KINDS_CHUNK", CHUNK, raising=False)
    db = copy_store(long_store, tmp_path)
    peaks: list[int] = []  # traced bytes above those held when the kinds read started, at its answer
    read_kinds, on_run_kinds = DashboardLoaders.read_kinds, DashboardResults.on_run_kinds

    def start(self: DashboardLoaders, key: RunKey, rows: RunIndex, upto: int) -> None:
        peaks.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.reset_peak()
        read_kinds(self, key, rows, upto)

    def landed(self: DashboardResults, msg: RunKinds) -> None:
        peaks[-1] = tracemalloc.get_traced_memory()[1] - peaks[-1]
        on_run_kinds(self, msg)

    monkeypatch.setattr(DashboardLoaders, "read_kinds", start)
    monkeypatch.setattr(DashboardResults, "on_run_kinds", landed)
    app = make_app(db)
    tracemalloc.start()
    try:
        async with app.run_test(size=size) as pilot:
            main = await settle(app, pilot)
            kinds_in = lambda: main.events.sparse and not main.events.kinds_pending  # noqa: E731
            await pilot_until(pilot, kinds_in, "the kinds", limit=120)
            tracemalloc.stop()
            run = main.events.rows
            got = sql(db, "SELECT id, kind_tag FROM events WHERE stream_id LIKE 'chat-long%'")
            kinds = {int(str(gid)): str(tag) for gid, tag in got}
            assert len(run) == len(kinds) > EVENTS - 10
            assert [main.events.tag_of(row) for row in run] == [kinds[row[0]] for row in run]
            await pilot.press("t")  # kinds: LLM calls
            await pilot.pause(0.1)
            llm = sum(tag in LLM_TAGS for tag in kinds.values())
            title = str(main.query_one("#events").border_title)
            assert title.startswith(f"Events · {llm}/{len(run)} events"), title
    finally:
        tracemalloc.stop()
    assert len(peaks) == 1
    # a dict of every id and the store's answers to it, held at once: 107-108 B an event (the old way); a byte
    # an id and one chunk's answer: 5, but the traced peak also holds what the screen makes meanwhile (the
    # events list, the run's other workers): 18-28 B quiet, 30.2 in a CI run at load ~2 (c433ec4 the same)
    assert peaks[0] / EVENTS < 50, f"{peaks[0] / EVENTS:.0f} B an event"


@pytest.mark.parametrize("spread", [1, 3, 40])  # ids packed, gapped, spread thin (a dict then)
def test_kind_codes_read_back_what_a_dict_holds(spread: int) -> None:
    """Every id's tag as a plain dict holds it, 300 distinct tags (past a byte's 255), ids out of order,
    answers given in chunks; an id never answered reads as the default."""
    ids = [1_000 + spread * i for i in range(2_000)]
    ids.reverse()
    truth = {gid: f"kind_{gid % 300}" for gid in ids[:-1]}  # the last id is never answered
    codes = KindCodes(ids)
    items = list(truth.items())
    for i in range(0, len(items), 333):
        codes.add(dict(items[i : i + 333]))
    assert [codes.get(gid, "?") for gid in ids] == [truth.get(gid, "?") for gid in ids]
    assert len(codes) == len(truth)
    assert (len(codes.codes) > 0) == (spread <= 16)
