"""Pilot tests of the knob editor on oracle stores, checked against `zymi-tui replay --set`."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from textual.widgets import Input, Select, Static

from tests.conftest import ORACLE, requires_oracle
from zymi_tui.events.sqlite import SqliteReader
from zymi_tui.tui.tuning.app import TuningApp
from zymi_tui.tui.tuning.editor import TuningScreen
from zymi_tui.tui.tuning.plots import CurvePlot

pytestmark = requires_oracle
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


async def open_editor(name: str) -> tuple[TuningApp, SqliteReader]:
    reader = await SqliteReader.open(str(ORACLE / name / "events.db"))
    screen = TuningScreen(reader, first_stream(name), project=ORACLE / name / "project")
    return TuningApp(reader, screen), reader


async def settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def test_edit_a_knob_matches_replay_set() -> None:
    want = cli_replay(NAME, "observation_window=2")
    app, reader = await open_editor(NAME)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, TuningScreen)
            recorded_curve = list(screen.query_one(CurvePlot).curve.recorded)  # type: ignore[union-attr]
            field = screen.query_one("#knob-observation_window", Input)
            field.value = "2"
            await settle(pilot)
            assert screen.what_if_calls is not None
            curve = screen.query_one(CurvePlot).curve
            assert curve is not None
            assert dict(zip(curve.sequences, curve.what_if, strict=True)) == {s: r["chars"] for s, r in want.items()}
            assert curve.recorded == recorded_curve
            picked = curve.sequences[screen.picked]
            assert screen.diff is not None
            assert screen.diff.chars_after == want[picked]["chars"]
            assert screen.diff.messages_after == want[picked]["message_count"]
            assert screen.diff.count("masked") > 0
            assert "what-if" in str(screen.query_one("#summary", Static).render())
    finally:
        await reader.close()


async def test_bad_value_shows_error_and_changes_nothing() -> None:
    app, reader = await open_editor(NAME)
    try:
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
    finally:
        await reader.close()


@pytest.mark.parametrize("profile", ["chat", "eval"])
async def test_switching_profiles_and_back_restores_recorded(profile: str) -> None:
    app, reader = await open_editor(NAME)
    try:
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
    finally:
        await reader.close()


def test_help_lists_the_tuning_commands() -> None:
    out = subprocess.run([sys.executable, "-m", "zymi_tui", "--help"], capture_output=True, text=True).stdout
    assert all(cmd in out for cmd in ("compare", "sweep", "rent", "find"))
