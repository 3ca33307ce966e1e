"""A long run in the dashboard, driven by keys, on both paths: read whole (a small run) and sparse
(shown from its index, rows read as drawn, plot and search from workers). `ZYMI_TUI_SPARSE_EVENTS`
(README) is lowered so a generated run of a few thousand events takes the sparse path."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import Static

from tests.conftest import copy_store, long_run_store
from tests.tui_support import make_app, settle, sql
from tests.waiting import LIMIT, pilot_until
from zymi_tui.events.run_index import RunIndex
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.stored import BadRow
from zymi_tui.tui.app import DashboardApp, MainScreen
from zymi_tui.tui.graph_view import GraphView
from zymi_tui.tui.inspector import InspectorScreen
from zymi_tui.tui.model import format_size
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.state.events import Header
from zymi_tui.tui.tuning.editor import TuningScreen
from zymi_tui.tui.widgets import EventsList

ROOT = Path(__file__).resolve().parents[1]
RUN = "chat-long"
EVENTS = 3000
STEP = f"{RUN}:step:work"
HOSTILE_KIND = "llm_call_started\x1b[2J[/x]\u202e"  # an escape, Rich markup, a bidi override


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return long_run_store(tmp_path_factory.mktemp("long"), EVENTS)


@pytest.fixture(params=["sparse", "whole"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("ZYMI_TUI_SPARSE_EVENTS", "1000" if request.param == "sparse" else "1000000")
    yield str(request.param)


@pytest.fixture
def db(long_store: Path, tmp_path: Path) -> Path:
    return copy_store(long_store, tmp_path / "long")


def agent_calls(db: Path) -> list[tuple[int, int]]:
    """(global id, approx_context_chars) of every agent LLM call (iteration > 0), by SQL."""
    rows = sql(db, "SELECT id, data FROM events WHERE kind_tag = 'llm_call_started' ORDER BY id")
    out = []
    for gid, data in rows:
        d = json.loads(str(data))["kind"]["data"]
        if d["iteration"] > 0:
            out.append((int(str(gid)), int(d["approx_context_chars"])))
    return out


def screen_text(app: DashboardApp) -> str:
    view = app.main.query_one(EventsList)
    return "\n".join(view.render_line(y).text for y in range(view.scrollable_content_region.height))


def make_hostile(db: Path, gid: int, *, data: str | None = None) -> None:
    """Give a row the hostile kind column (and, with `data`, that data: `{not json` makes it unreadable)."""
    with sqlite3.connect(db) as c:
        c.execute("UPDATE events SET kind_tag = ?, data = COALESCE(?, data) WHERE id = ?", (HOSTILE_KIND, data, gid))


def events_title(main: MainScreen) -> str:
    return str(main.query_one("#events").border_title)


async def opened(app: DashboardApp, pilot: Pilot[None], db: Path, path: str) -> MainScreen:
    main = await settle(app, pilot)
    assert main.events.sparse == (path == "sparse")
    plot = main.query_one(ContextPlot)
    n = len(agent_calls(db))
    await pilot_until(pilot, lambda: len(plot.all_calls()) == n, "every call on the plot")
    return main


async def drawn(pilot: Pilot[None], app: DashboardApp) -> str:
    """The events list once every row on screen is read and drawn."""
    await pilot_until(pilot, lambda: "… #" not in screen_text(app), "the rows on screen read")
    return screen_text(app)


async def append_the_last_call_again(db: Path) -> None:
    """Append copies of the step's last LLM call started and its completion (new ids): the run grows by
    two events and one agent call."""
    async with await SqliteReader.open(db) as r:
        step = await r.read_stream(STEP)
    started = max(i for i, se in enumerate(step) if se.event.tag == "llm_call_started")
    last_two = step[started : started + 2]
    assert [se.event.tag for se in last_two] == ["llm_call_started", "llm_call_completed"]
    async with await SqliteWriter.open(db) as w:
        for se in last_two:
            await w.append(msgspec.structs.replace(se.event, id=str(uuid.uuid4())))


async def test_the_run_opens_with_its_rows_plot_and_graph(db: Path, path: str) -> None:
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await opened(app, pilot, db, path)
        assert len(main.events.rows) == EVENTS == sql(db, "SELECT COUNT(*) FROM events")[0][0]
        # grouped: the run stream, then the step; the cursor on the step's newest event
        assert main.events.cursor_gid == sql(db, "SELECT MAX(id) FROM events WHERE stream_id = ?", STEP)[0][0]
        text = await drawn(pilot, app)
        newest = json.loads(str(sql(db, "SELECT data FROM events WHERE id = ?", main.events.cursor_gid)[0][0]))
        assert newest["timestamp"][11:19] in text
        assert f"{EVENTS}/{EVENTS} events" in str(main.query_one("#events").border_title)
        if path == "sparse":
            assert len(main.events.decoded) < EVENTS // 2  # only what was drawn (and the newest page) is read
        calls = agent_calls(db)
        plot = main.query_one(ContextPlot)
        assert [(c.global_id, c.chars) for c in plot.all_calls()] == calls
        node = f"work  —  {len(calls)} LLM call(s), last {format_size(calls[-1][1])}"

        def graph_text() -> str:
            return str(main.query_one(GraphView).query_one("#graph-text", Static).render())

        await pilot_until(pilot, lambda: node in graph_text(), "the graph's node with its calls")


async def test_scroll_flat_order_and_expand(db: Path, path: str) -> None:
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await opened(app, pilot, db, path)
        await pilot.press("tab", "home")
        first = sql(db, "SELECT MIN(id) FROM events WHERE stream_id = ?", RUN)[0][0]
        assert main.events.cursor_gid == first
        text = await drawn(pilot, app)
        first_ts = json.loads(str(sql(db, "SELECT data FROM events WHERE id = ?", first)[0][0]))["timestamp"]
        assert text.splitlines()[0].startswith("»") and first_ts[11:19] in text.splitlines()[0]
        await pilot.press("o")  # flat, in store order: the store's first event on top
        assert not any(isinstance(it, Header) for it in main.events.layout.items)
        gids = [it[0] for it in main.events.layout.items if not isinstance(it, Header)]
        assert len(gids) == EVENTS and gids == sorted(gids)
        await pilot.press("home", *["pagedown"] * 3)
        gid = main.events.cursor_gid
        await drawn(pilot, app)
        lines = main.events.layout.line_count
        await pilot.press("enter")
        await pilot_until(pilot, lambda: main.events.layout.line_count > lines, "the payload expanded")
        assert main.events.cursor_gid == gid and gid in main.events.expanded
        assert f"global id: {gid}" in await drawn(pilot, app)
        await pilot.press("enter")
        assert main.events.layout.line_count == lines


async def test_search_kinds_and_steps(db: Path, path: str) -> None:
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await opened(app, pilot, db, path)
        await pilot.press("tab", "slash", *"read_file", "enter")
        hits = sql(db, "SELECT COUNT(*) FROM events WHERE data LIKE '%read_file%'")[0][0]
        shown = lambda: main.events.layout.visible_count  # noqa: E731  (a filter lays the list out anew)
        await pilot_until(pilot, lambda: shown() == hits and not main.searching_run, "the hits")
        assert "read_file" in (await drawn(pilot, app)).lower()
        await pilot.press("slash", "escape")
        assert main.events.layout.visible_count == EVENTS
        await pilot.press("t")  # LLM calls
        llm = {"llm_call_started", "llm_call_completed", "llm_call_failed", "context_compacted"}
        n = sql(db, f"SELECT COUNT(*) FROM events WHERE kind_tag IN ({','.join('?' * len(llm))})", *llm)[0][0]
        assert main.events.layout.visible_count == n
        assert {row[3] for row in main.events.layout.items if isinstance(row, tuple)} <= llm
        await pilot.press("t", "t", "t", "s")  # all kinds, then the run stream only
        count = "SELECT COUNT(*) FROM events WHERE stream_id = ?"
        assert main.events.layout.visible_count == sql(db, count, RUN)[0][0]
        await pilot.press("s")
        assert main.events.layout.visible_count == sql(db, count, STEP)[0][0]


async def test_search_finds_the_line_shown_and_never_an_unreadable_row(db: Path, path: str) -> None:
    """`LLM done` is in no row's data, only in the line each call's completion shows: every completion is
    found (a long run's worker makes the line from the row's text). An unreadable row whose text holds
    the needle is no hit, and the banner counts it."""
    done = [int(str(gid)) for (gid,) in sql(db, "SELECT id FROM events WHERE kind_tag = 'llm_call_completed'")]
    assert sql(db, "SELECT COUNT(*) FROM events WHERE data LIKE '%llm done%'")[0][0] == 0
    bad = done[len(done) // 2]
    with sqlite3.connect(db) as c:
        c.execute("UPDATE events SET data = '{not json, LLM done' WHERE id = ?", (bad,))
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot.press("tab", "slash", *"LLM done", "enter")
        await pilot_until(pilot, lambda: not main.searching_run, "the search done")
        shown = {it[0] for it in main.events.layout.items if isinstance(it, tuple)}
        assert shown == set(done) - {bad}
        assert "LLM done" in await drawn(pilot, app)
        banner = main.query_one("#banner")
        await pilot_until(pilot, lambda: "1 unreadable row(s) skipped" in str(banner.render()), "the banner")


async def test_inspector_and_knob_editor_on_a_call_picked_on_the_plot(db: Path, path: str) -> None:
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await opened(app, pilot, db, path)
        first_call = agent_calls(db)[0][0]
        main.query_one(ContextPlot).focus()
        await pilot.press("right", "enter")  # the first call: not among a long run's rows read so far
        await pilot_until(pilot, lambda: isinstance(app.screen, InspectorScreen), "the inspector")
        screen = app.screen
        assert isinstance(screen, InspectorScreen)
        assert screen.call.global_id == first_call
        await pilot_until(pilot, lambda: screen.rebuilt is not None, "the rebuilt context")
        await pilot.press("escape")
        await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen), "the dashboard")
        await pilot.press("K")
        await pilot_until(pilot, lambda: isinstance(app.screen, TuningScreen), "the knob editor")
        editor = app.screen
        assert isinstance(editor, TuningScreen)
        seq = sql(db, "SELECT sequence FROM events WHERE id = ?", first_call)[0][0]
        assert (editor.stream_id, editor.want_seq) == (STEP, seq)  # the picked call


async def test_live_events_of_the_run_are_added_with_the_cursor_kept(db: Path, path: str) -> None:
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await opened(app, pilot, db, path)
        await pilot.press("tab", "up", "up")
        cursor = main.events.cursor_gid
        await append_the_last_call_again(db)
        plot = main.query_one(ContextPlot)
        n = len(agent_calls(db))
        await pilot_until(pilot, lambda: len(main.events.rows) == EVENTS + 2, "the new events listed")
        await pilot_until(pilot, lambda: len(plot.all_calls()) == n, "the new call on the plot")
        assert main.events.cursor_gid == cursor
        assert plot.all_calls()[-1].global_id == agent_calls(db)[-1][0]


@pytest.fixture(scope="module")
def compacting_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("compacting") / "events.db"
    script = ROOT / "benchmarks" / "make_long_run.py"
    make = [sys.executable, str(script), str(db), "--events", "1500", "--from", "coding_compaction"]
    subprocess.run(make, check=True, capture_output=True)
    return db


async def test_a_compaction_lists_and_marks_what_it_replaced(compacting_store: Path, tmp_path: Path, path: str) -> None:
    db = copy_store(compacting_store, tmp_path / "c")
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        assert main.events.sparse == (path == "sparse")
        # an early compaction: its replaced events are far from the rows read first
        comp, data = sql(db, "SELECT id, data FROM events WHERE kind_tag = 'context_compacted' ORDER BY id")[1]
        lo, hi = json.loads(str(data))["kind"]["data"]["replaces_seq_range"]
        replaced = sql(db, "SELECT id FROM events WHERE stream_id = ? AND sequence BETWEEN ? AND ? ORDER BY id",
                       STEP, lo, hi)  # fmt: skip
        await pilot.press("tab")
        assert main.events.jump_to(int(str(comp)))
        await pilot.press("enter")
        await pilot_until(pilot, lambda: int(str(comp)) in main.events.expanded, "the compaction expanded")
        main.query_one(EventsList).keep_cursor_visible()
        text = await drawn(pilot, app)
        await pilot_until(pilot, lambda: "(reading…)" not in screen_text(app), "the replaced events read")
        text = screen_text(app)
        assert f"replaced: {len(replaced)} event(s), seq {lo}..={hi}" in text
        assert f"#{lo}: " in text
        await pilot.press("g")
        assert main.events.cursor_gid == replaced[0][0]
        assert "┃" in await drawn(pilot, app)


async def test_an_unreadable_row_with_a_hostile_kind_is_shown_cleaned_and_counted(db: Path, path: str) -> None:
    """The row's data does not decode and its kind column holds an escape, Rich markup and a bidi override:
    it is counted in the banner before anyone scrolls to it (a long run reads it with the plot's rows, as
    its kind column names no known kind), shown with its kind made visible, and the list moves past it."""
    calls = agent_calls(db)
    bad = calls[len(calls) // 2][0]  # an LLM call in the middle of the run
    make_hostile(db, bad, data="{not json")
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        plot = main.query_one(ContextPlot)
        await pilot_until(pilot, lambda: len(plot.all_calls()) == len(calls) - 1, "the other calls on the plot")
        assert bad not in {c.global_id for c in plot.all_calls()}
        banner = main.query_one("#banner")
        await pilot_until(pilot, lambda: "1 unreadable row(s) skipped" in str(banner.render()), "the banner")
        await pilot.press("tab", "o", "home")  # flat, then page down until the bad row is on screen
        while main.events.cursor_gid is not None and main.events.cursor_gid < bad:
            await pilot.press("pagedown")
        while main.events.cursor_gid is not None and main.events.cursor_gid > bad + 1:
            await pilot.press("up")
        text = await drawn(pilot, app)
        assert not {"\x1b", "\u202e"} & set(text)
        if path == "sparse":  # listed from the index, read as drawn: shown as unreadable, its kind visible
            line = next(line for line in text.splitlines() if f"unreadable row {bad}" in line)
            assert "llm_call_started\\x1b[2J[/x]\\u202e" in line
        else:  # read whole: left out of the list, as every reader does
            assert bad not in main.events.decoded and bad not in {row[0] for row in main.events.rows}
        await pilot.press("up", "enter", "enter", "up")  # onto the row (whole: the one before), expanded and not
        assert main.events.cursor_gid is not None and main.events.cursor_gid < bad
        await pilot.press("down", "down", "down")
        assert main.events.cursor_gid is not None and main.events.cursor_gid > bad
        assert "\x1b" not in await drawn(pilot, app)


async def test_a_call_whose_kind_column_is_hostile_is_plotted_as_its_data_says(db: Path, path: str) -> None:
    """Only the kind column is hostile: the row's data is a whole LLM call, on the plot on both paths
    (a long run picks the plot's rows by that column: one naming no known kind is read to see what it is)."""
    calls = agent_calls(db)
    odd = calls[len(calls) // 2][0]
    make_hostile(db, odd)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        plot = main.query_one(ContextPlot)
        await pilot_until(pilot, lambda: len(plot.all_calls()) == len(calls), "every call on the plot")
        assert [(c.global_id, c.chars) for c in plot.all_calls()] == calls
        assert "unreadable" not in str(main.query_one("#banner").render())


async def test_a_hostile_kind_in_the_command_palette_is_shown_cleaned(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long run's kind tags (its index's kind column) are offered as filters in the command palette:
    a hostile one is offered with its controls made visible and its markup shown as text."""
    monkeypatch.setenv("ZYMI_TUI_SPARSE_EVENTS", "1000")
    bad = agent_calls(db)[0][0]
    make_hostile(db, bad, data="{not json")
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        assert main.events.sparse
        await pilot_until(pilot, lambda: "reading kinds" not in events_title(main), "the kinds read")
        await pilot.press("tab", "ctrl+p", *"kind", "space", *"started")

        def palette() -> str:
            if not isinstance(app.screen, CommandPalette):
                return ""
            hits = app.screen.query_one(CommandList)
            return "\n".join(hits.render_line(y).text for y in range(hits.scrollable_content_region.height))

        await pilot_until(pilot, lambda: palette().count("kind llm_call_started") >= 2, "both kinds offered")
        assert not {"\x1b", "\u202e"} & set(palette() + app.export_screenshot())
        assert "kind llm_call_started\\x1b[2J" in palette()


async def test_events_written_while_the_run_is_read_reach_the_list_and_the_plot(
    long_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sparse path: the run's ids are held back once read (as a slow read would be) while the run
    grows; the new events come by the live tail, are added when the ids land and, being in the list
    the collector reads, are on the plot."""
    import threading

    monkeypatch.setenv("ZYMI_TUI_SPARSE_EVENTS", "1000")
    db = copy_store(long_store, tmp_path / "grow")
    gate = threading.Event()
    read_index = SqliteReader.run_index

    async def held(self: SqliteReader, stream_id: str) -> RunIndex:
        rows = await read_index(self, stream_id)
        gate.wait(LIMIT)
        return rows

    monkeypatch.setattr(SqliteReader, "run_index", held)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot_until(pilot, lambda: app.main.run_loading and len(app.main.events.rows) > 0, "the newest page")
        main = app.main
        await append_the_last_call_again(db)
        await pilot_until(pilot, lambda: len(main.pending_live) == 2, "the new events seen by the live tail")
        gate.set()
        plot = main.query_one(ContextPlot)
        n = len(agent_calls(db))
        await pilot_until(pilot, lambda: main.events.sparse and len(main.events.rows) == EVENTS + 2, "listed")
        await pilot_until(pilot, lambda: len(plot.all_calls()) == n, "the new call on the plot")
        assert plot.all_calls()[-1].global_id == agent_calls(db)[-1][0]


async def test_the_run_is_listed_before_its_kinds_are_read(
    long_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sparse path lists a long run from its ids; the rows' kinds come in a second read, held back
    here. Meanwhile the list is counted, drawn and navigable; a kind filter chosen then shows nothing and
    says it waits (never a wrong answer); events written meanwhile are listed at once. Once the kinds
    land the filter shows exactly the run's rows of those kinds, and the plot has every call."""
    import threading

    monkeypatch.setenv("ZYMI_TUI_SPARSE_EVENTS", "1000")
    db = copy_store(long_store, tmp_path / "kinds")
    gate = threading.Event()
    kinds_of = SqliteReader.kinds_of

    async def held(self: SqliteReader, ids: list[int]) -> dict[int, str]:
        gate.wait(LIMIT)
        return await kinds_of(self, ids)

    monkeypatch.setattr(SqliteReader, "kinds_of", held)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        assert main.events.sparse
        assert f"{EVENTS}/{EVENTS} events · reading kinds…" in events_title(main)
        plot = main.query_one(ContextPlot)
        assert "reading the run's calls…" in str(plot.render())  # not "no LLM calls"
        await pilot.press("tab", "home")
        assert main.events.cursor_gid == sql(db, "SELECT MIN(id) FROM events WHERE stream_id = ?", RUN)[0][0]
        first_ts = json.loads(str(sql(db, "SELECT data FROM events WHERE id = ?", main.events.cursor_gid)[0][0]))
        assert first_ts["timestamp"][11:19] in (await drawn(pilot, app)).splitlines()[0]
        await pilot.press("end", "t")  # LLM calls, before the kinds are known
        assert main.events.layout.visible_count == 0
        assert f"0/{EVENTS} events · LLM calls · reading kinds…" in events_title(main)
        await append_the_last_call_again(db)
        await pilot_until(pilot, lambda: len(main.events.rows) == EVENTS + 2, "the new events listed")
        assert main.events.layout.visible_count == 2  # the new call started and completed: their kinds came with them
        assert "reading kinds…" in events_title(main)
        await pilot.press("t", "t", "t", "K")  # all kinds again; the knob editor picks among the run's calls: waits
        await pilot_until(pilot, lambda: any("event kinds" in str(n.message) for n in app._notifications), "told so")
        assert app.screen is main and main.events.layout.visible_count == EVENTS + 2
        await pilot.press("t")
        gate.set()
        await pilot_until(pilot, lambda: "reading kinds" not in events_title(main), "the kinds read")
        llm = ("llm_call_started", "llm_call_completed", "llm_call_failed", "context_compacted")
        n = sql(db, f"SELECT COUNT(*) FROM events WHERE kind_tag IN ({','.join('?' * len(llm))})", *llm)[0][0]
        assert main.events.layout.visible_count == n
        assert f"{n}/{EVENTS + 2} events · LLM calls" in events_title(main)
        assert {row[3] for row in main.events.layout.items if isinstance(row, tuple)} <= set(llm)
        assert "LLM" in (await drawn(pilot, app))
        await pilot_until(pilot, lambda: len(plot.all_calls()) == len(agent_calls(db)), "every call on the plot")


async def test_events_written_while_the_plot_is_collected_reach_it(
    long_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sparse path: the worker collecting the plot is held back while the run grows; the new events
    are listed at once and given to the collector once it has read the run."""
    import threading

    from zymi_tui.tui.state.plot import CallCollector

    monkeypatch.setenv("ZYMI_TUI_SPARSE_EVENTS", "1000")
    db = copy_store(long_store, tmp_path / "grow")
    gate = threading.Event()
    feed_rows = CallCollector.feed_rows

    def held(self: CallCollector, rows: list[tuple[int, str, int, str]]) -> list[BadRow]:
        gate.wait(LIMIT)
        return feed_rows(self, rows)

    monkeypatch.setattr(CallCollector, "feed_rows", held)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        assert main.events.sparse
        await append_the_last_call_again(db)
        await pilot_until(pilot, lambda: len(main.events.rows) == EVENTS + 2, "the new events listed")
        assert not main.calls_done
        gate.set()
        plot = main.query_one(ContextPlot)
        n = len(agent_calls(db))
        await pilot_until(pilot, lambda: len(plot.all_calls()) == n, "the new call on the plot")
        assert plot.all_calls()[-1].global_id == agent_calls(db)[-1][0]
