"""Pilot tests of the knob editor on oracle stores, checked against `zymi-tui replay --set`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input, Select, Static

from tests.conftest import ORACLE
from tests.waiting import pilot_until, workers_idle
from zymi_tui.context.knobs import PROFILES
from zymi_tui.events.location import SqliteStore
from zymi_tui.events.store import EventReader
from zymi_tui.replay.compare_report import COLUMNS
from zymi_tui.tui.tuning.app import TuningApp
from zymi_tui.tui.tuning.compare_screen import CompareScreen
from zymi_tui.tui.tuning.curve_view import CurveView
from zymi_tui.tui.tuning.editor import TuningScreen

NAME = "coding_default"


def first_stream(name: str) -> str:
    stream: str = json.loads((ORACLE / name / "expected.json").read_text())[0]["stream_id"]
    return stream


def cli_replay(name: str, *sets: str) -> dict[int, dict[str, Any]]:
    """What `zymi-tui replay --json --set ...` says per call of the first stream (a separate process)."""
    args = [sys.executable, "-m", "zymi_tui", "replay", str(ORACLE / name / "events.db"), "--project",
            str(ORACLE / name / "project"), "--json"]  # fmt: skip
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    stream = first_stream(name)
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["sequence"]: r for r in rows if r.get("stream_id") == stream and r.get("kind") == "agent"}


def editor_app(name: str) -> TuningApp:
    def make(reader: EventReader) -> TuningScreen:
        return TuningScreen(reader, first_stream(name), project=ORACLE / name / "project")

    return TuningApp(SqliteStore(ORACLE / name / "events.db"), make)


async def settle(pilot: Any) -> None:
    await workers_idle(pilot)


async def test_edit_a_knob_matches_replay_set() -> None:
    want = cli_replay(NAME, "observation_window=2")
    app = editor_app(NAME)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TuningScreen)
        recorded_curve = list(screen.query_one(CurveView).curve.recorded)  # type: ignore[union-attr]
        field = screen.query_one("#knob-observation_window", Input)
        field.value = "2"
        await settle(pilot)
        assert screen.what_if_calls is not None
        curve = screen.query_one(CurveView).curve
        assert curve is not None
        assert dict(zip(curve.sequences, curve.what_if, strict=True)) == {s: r["chars"] for s, r in want.items()}
        assert curve.recorded == recorded_curve
        picked = curve.sequences[screen.picked]
        assert screen.diff is not None
        assert screen.diff.chars_after == want[picked]["chars"]
        assert screen.diff.messages_after == want[picked]["message_count"]
        assert screen.diff.count("masked") > 0
        assert "what-if" in str(screen.query_one("#summary", Static).render())


async def test_bad_value_shows_error_and_changes_nothing() -> None:
    app = editor_app(NAME)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TuningScreen)
        before = screen.form.knobs
        screen.query_one("#knob-soft_cap_chars", Input).value = "many"
        await settle(pilot)
        assert "not an integer" in str(screen.query_one("#err-soft_cap_chars", Static).render())
        assert screen.form.knobs == before and screen.what_if_calls is None
        screen.query_one("#knob-soft_cap_chars", Input).value = "900000"  # above the hard cap 600000
        await settle(pilot)
        assert "hard_cap_chars" in str(screen.query_one("#err-hard_cap_chars", Static).render())
        assert screen.form.knobs == before and screen.what_if_calls is None


@pytest.mark.parametrize("profile", ["chat", "eval"])
async def test_switching_profiles_and_back_restores_recorded(profile: str) -> None:
    app = editor_app(NAME)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TuningScreen)
        recorded_summary = str(screen.query_one("#summary", Static).render())
        select = screen.query_one("#profile", Select)
        select.value = profile
        await settle(pilot)
        assert screen.what_if_calls is not None
        assert screen.query_one("#knob-observation_window", Input).value != "10"
        select.value = "recorded"
        await settle(pilot)
        assert screen.what_if_calls is None and screen.diff is None
        assert screen.query_one("#knob-observation_window", Input).value == "10"
        assert str(screen.query_one("#summary", Static).render()) == recorded_summary


async def test_a_profile_picked_with_keys_replays_the_stream_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a profile fills five inputs; their change events are not five more edits (each one
    started the whole-stream what-if again, cancelling the previous one)."""
    from zymi_tui.tui.tuning.whatif import StreamWhatIf

    replays: list[object] = []
    real = StreamWhatIf.run

    def counted(self: StreamWhatIf, knobs: Any, *args: Any, **kw: Any) -> Any:
        replays.append(knobs)
        return real(self, knobs, *args, **kw)

    monkeypatch.setattr(StreamWhatIf, "run", counted)
    app = editor_app(NAME)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TuningScreen)
        screen.query_one("#profile", Select).focus()
        downs = ["down"] * (list(PROFILES).index("chat") + 1)  # the options: "recorded (project)", then PROFILES
        await pilot.press("enter", *downs, "enter")
        await settle(pilot)
        assert screen.query_one("#profile", Select).value == "chat"
        assert screen.query_one("#knob-observation_window", Input).value == str(PROFILES["chat"].observation_window)
        assert replays == [PROFILES["chat"]]
        assert screen.what_if_calls is not None


def test_help_lists_the_tuning_commands() -> None:
    out = subprocess.run([sys.executable, "-m", "zymi_tui", "--help"], capture_output=True, text=True).stdout
    assert all(cmd in out for cmd in ("compare", "sweep", "rent", "find"))


def cli_json(*args: str) -> Any:
    out = subprocess.run([sys.executable, "-m", "zymi_tui", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


async def test_comparison_table_matches_cli_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZYMI_TUI_CONFIG_DIR", str(tmp_path))  # the built-in prices, no user files
    name = "hard_cap"
    db, project = SqliteStore(ORACLE / name / "events.db"), ORACLE / name / "project"
    want = cli_json("compare", str(db), "--project", str(project), "--profiles", "recorded,chat", "--model", "gpt-4o",
                    "--format", "json")  # fmt: skip
    monkeypatch.setenv("ZYMI_TUI_EXPORT_DIR", str(tmp_path))
    app = TuningApp(db, lambda _r: CompareScreen(db, project=project, profiles="recorded,chat", model="gpt-4o"))
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        table = screen.query_one("#totals", DataTable)
        shown = {str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)[1:]] for i in range(table.row_count)}
        for key, label in COLUMNS:
            assert shown[label] == [f"{p['total'][key]:,}" for p in want["profiles"]], label
        assert shown["cost"][0] == f"{want['profiles'][0]['total']['cost']['total']:.4f} USD"
        assert shown["figures"] == [p["total"]["provenance"] for p in want["profiles"]]
        per_run = screen.query_one("#per-run", DataTable)
        assert per_run.row_count == len(want["profiles"][0]["runs"])
        await pilot.press("ctrl+o")
        await pilot.pause()
        exported = json.loads((tmp_path / "zymi-tui-compare.json").read_text())
        assert exported["profiles"] == want["profiles"]


async def wait_for(pilot: Any, cls: type, ready: str | None = None) -> Any:
    """Poll (the dashboard's live tail worker never completes, so workers cannot be awaited)."""

    def opened() -> bool:
        screen = pilot.app.screen
        return isinstance(screen, cls) and (ready is None or getattr(screen, ready) not in (None, False))

    await pilot_until(pilot, opened, f"{cls.__name__} to open")
    return pilot.app.screen


async def test_dashboard_opens_the_tuning_screens() -> None:
    from zymi_tui.tui.app import DashboardApp, MainScreen
    from zymi_tui.tui.target import Target
    from zymi_tui.tui.tuning.sweep_screen import SweepScreen

    name = "coding_default"
    app = DashboardApp(Target(SqliteStore(ORACLE / name / "events.db"), ORACLE / name / "project"))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen) and bool(app.screen.events.rows))
        main = app.screen
        await pilot.press("K")
        editor = await wait_for(pilot, TuningScreen, "curve")
        assert editor.stream_id == first_stream(name)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("W")
        await wait_for(pilot, SweepScreen, "result")
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("X")
        await wait_for(pilot, CompareScreen, "comparison")
        if isinstance(main, MainScreen) and main.reader is not None:
            await main.reader.close()  # the dashboard does not close its reader on exit (reported to the lead)
