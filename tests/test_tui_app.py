"""Pilot tests: the dashboard driven by keys on copies of the oracle stores."""

from __future__ import annotations

import json
import time
from pathlib import Path

from textual.widgets import DataTable

from tests.conftest import ORACLE
from tests.tui_support import make_app, scenario_copy, settle, sql
from tests.waiting import LIMIT, pilot_until
from zymi_tui.events.sqlite_schema import SCHEMA as SqliteSchema
from zymi_tui.replay.call_context import CallContext
from zymi_tui.tui.inspector import InspectorScreen
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.widgets import EventsList, RunsList


async def wait_rebuilt(screen: InspectorScreen, pilot: object, timeout: float = LIMIT) -> CallContext:
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    deadline = time.monotonic() + timeout
    while screen.rebuilt is None and time.monotonic() < deadline:
        await pilot.pause(0.05)
    assert screen.rebuilt is not None, "the inspector did not rebuild the call"
    await pilot.pause(0.05)
    return screen.rebuilt


async def test_opens_a_store_and_shows_the_run_with_its_step_streams(tmp_path: Path) -> None:
    db = scenario_copy("coding_default", tmp_path)
    before = db.read_bytes()
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        (stream,) = [s for (s,) in sql(db, "SELECT DISTINCT stream_id FROM events") if ":step:" not in str(s)]
        assert main.selected is not None and main.selected.stream_id == stream
        assert len(main.events.rows) == sql(db, "SELECT COUNT(*) FROM events")[0][0]
        # grouped by step (run stream first), newest last: the cursor starts on the step's newest event
        assert main.events.cursor_gid == sql(db, "SELECT MAX(id) FROM events WHERE stream_id LIKE '%:step:%'")[0][0]
        plot = app.main.query_one(ContextPlot)
        n_agent = sql(db, "SELECT COUNT(*) FROM events WHERE kind_tag='llm_call_started' "
                      "AND data NOT LIKE '%\"iteration\":0,%'")[0][0]  # fmt: skip
        assert len(plot.all_calls()) == n_agent
        # where masking starts, from the context engine's rebuild: iteration 12 (oracle README)
        # the redraw timer applies the context engine's answer to the plot
        await pilot_until(pilot, lambda: "work" in plot.steps and plot.steps["work"].masking_exact, "masking applied")
        work = plot.steps["work"]
        assert work.masking_exact and work.masking_from is not None
        assert work.calls[work.masking_from - 1].iteration == 12
    assert db.read_bytes() == before  # never a write


async def test_expand_an_event_then_search_and_filter(tmp_path: Path) -> None:
    db = scenario_copy("coding_default", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot.press("tab")
        assert isinstance(app.focused, EventsList)
        lines = main.events.layout.line_count
        await pilot.press("enter")
        assert main.events.cursor_gid in main.events.expanded
        assert main.events.layout.line_count > lines
        await pilot.press("enter")
        assert main.events.layout.line_count == lines
        # search
        await pilot.press("slash", *"read_file", "enter")
        hits = sql(db, "SELECT COUNT(*) FROM events WHERE data LIKE '%read_file%'")[0][0]
        assert main.events.layout.visible_count == hits
        await pilot.press("slash", "escape")
        assert main.events.layout.visible_count == len(main.events.rows)
        # kind preset: LLM calls
        await pilot.press("t")
        tags = {row[3] for row in main.events.layout.items if isinstance(row, tuple)}
        assert tags
        assert tags <= {"llm_call_started", "llm_call_completed", "llm_call_failed", "context_compacted"}
        # step filter: run stream, then step work
        await pilot.press("t", "t", "t", "s")
        assert main.events.step == ""
        await pilot.press("s")
        assert main.events.step == "work"


async def test_open_the_inspector_on_an_llm_call(tmp_path: Path) -> None:
    db = scenario_copy("coding_default", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        first_call = sql(db, "SELECT MIN(id) FROM events WHERE kind_tag='llm_call_started'")[0][0]
        assert main.events.jump_to(int(first_call))  # type: ignore[call-overload]
        await pilot.press("i")
        await pilot.pause()
        assert isinstance(app.screen, InspectorScreen)
        assert app.screen.call.global_id == first_call
        rebuilt = await wait_rebuilt(app.screen, pilot)
        expected = json.loads((ORACLE / "coding_default" / "expected.json").read_text())[0]
        assert expected["global_id"] == first_call
        assert rebuilt.rendered is not None
        assert rebuilt.rendered.chars == expected["approx_context_chars"] == rebuilt.recorded_chars
        assert rebuilt.rendered.message_count == expected["message_count"]
        table = app.screen.query_one(DataTable)
        assert table.row_count == expected["message_count"]
        await pilot.press("escape")
        assert not isinstance(app.screen, InspectorScreen)
        # from the plot: focus it, pick with the arrow keys, Enter opens the inspector
        main.query_one(ContextPlot).focus()
        await pilot.press("left", "enter")
        await pilot.pause()
        assert isinstance(app.screen, InspectorScreen)
        last_call = sql(db, "SELECT MAX(id) FROM events WHERE kind_tag='llm_call_started'")[0][0]
        assert app.screen.call.global_id == last_call


async def test_chat_turns_are_entries_and_a_turn_shows_only_its_events(tmp_path: Path) -> None:
    db = scenario_copy("chat_profile", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        rows = main.runs.rows
        turn_rows = [i for i, r in enumerate(rows) if r.is_turn and r.key.stream_id == "chat-42"]
        assert len(turn_rows) == 16
        runs_list = main.query_one(RunsList)
        runs_list.focus()
        target = turn_rows[2]
        await pilot.press(*["down"] * (target - runs_list.cursor))
        main = await settle(app, pilot)
        key = main.selected
        assert key is not None and key.correlation_id == rows[target].summary.correlation_id
        cids = {se.event.correlation_id for se in main.events.loaded()} - {None}
        assert cids == {key.correlation_id}
        # the events of this turn on the stream and its steps, counted by SQL on the correlation id
        n = sql(db, "SELECT COUNT(*) FROM events WHERE correlation_id = ?", key.correlation_id)[0][0]
        assert len([se for se in main.events.loaded() if se.event.correlation_id]) == n


async def test_freeze_holds_live_events_until_unfrozen(tmp_path: Path) -> None:
    from tests.tui_support import append_copy_of_run

    db = scenario_copy("memory", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot.press("f")
        assert main.frozen
        runs_before = len(main.runs.summaries)
        await append_copy_of_run(db)
        await pilot_until(pilot, lambda: bool(main.held), "the new events held")
        assert len(main.runs.summaries) == runs_before
        await pilot.press("f")
        await pilot_until(pilot, lambda: not main.held and len(main.runs.summaries) == runs_before + 1, "the new run")


async def test_run_flag_selects_that_stream(tmp_path: Path) -> None:
    db = scenario_copy("chat_profile", tmp_path)
    app = make_app(db, run="chat-7")
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        assert main.selected is not None and main.selected.stream_id == "chat-7"


async def test_live_run_appears_with_its_plot_points_and_the_cursor_unmoved(tmp_path: Path) -> None:
    """Another process appends a whole run while the dashboard is open."""
    import subprocess
    import sys

    db = scenario_copy("coding_default", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot.press("tab", "up", "up", "enter")  # move and expand: must survive the update
        selected, cursor, expanded = main.selected, main.events.cursor_gid, set(main.events.expanded)
        scroll = main.query_one(EventsList).scroll_y
        code = (
            "import asyncio, sys; from pathlib import Path; from tests.tui_support import append_copy_of_run; "
            "print(asyncio.run(append_copy_of_run(Path(sys.argv[1]))))"
        )
        proc = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parents[1])  # fmt: skip
        new_stream = proc.stdout.strip()
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline and len(main.runs.summaries) < 2:
            await pilot.pause(0.05)
        assert main.runs.rows[0].key.stream_id == new_stream  # newest first
        assert main.selected == selected  # the selection stays on the run being looked at
        assert main.query_one(RunsList).cursor == 1
        assert (main.events.cursor_gid, main.events.expanded) == (cursor, expanded)
        assert main.query_one(EventsList).scroll_y == scroll
        # the new run's calls are on the plot once it is selected (follow newest)
        await pilot.press("n")
        main = await settle(app, pilot)
        assert main.selected is not None and main.selected.stream_id == new_stream
        n_agent = sql(db, "SELECT COUNT(*) FROM events WHERE kind_tag='llm_call_started' AND stream_id LIKE ? "
                      "AND data NOT LIKE '%\"iteration\":0,%'", new_stream + "%")[0][0]  # fmt: skip
        assert n_agent and len(main.query_one(ContextPlot).all_calls()) == n_agent


async def test_bad_inputs_give_a_message_in_the_app_never_a_traceback(tmp_path: Path) -> None:
    import sqlite3

    # an empty (schema only) store
    empty = tmp_path / "empty.db"
    with sqlite3.connect(empty) as c:
        c.executescript(SqliteSchema)
    app = make_app(empty)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await settle(app, pilot)
        assert main.runs.rows == [] and main.trouble is None
    # broken rows and an unknown kind
    db = scenario_copy("memory", tmp_path)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE events SET data = '{not json' WHERE id = 5")
        row = c.execute("SELECT data FROM events WHERE id = 6").fetchone()[0]
        c.execute("UPDATE events SET data = ? WHERE id = 6", (row.replace('"type":"', '"type":"FutureKind', 1),))
    (db.parent / "project" / "project.yml").write_text("runtime: [broken")  # invalid project YAML
    (db.parent / "project" / "pipelines" / "main.yml").write_text("steps: [")
    app = make_app(db)
    async with app.run_test(size=(60, 20)) as pilot:  # and a tiny terminal
        main = await settle(app, pilot)
        assert main.runs.rows
        banner = str(main.query_one("#banner").render())
        assert "unreadable row" in banner and "60x20" in banner
        await pilot.pause(0.5)
        # the store is deleted while open
        db.unlink()
        await pilot_until(pilot, lambda: main.trouble is not None and "deleted" in main.trouble, "the deletion noticed")
