"""The action registry: footer, `?` help and the command palette list the same actions on every screen,
the palette finds them by what they do, and no declared key can be one that never reaches the screen."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import Markdown
from textual.widgets._footer import FooterKey

from tests.tui_support import make_app, scenario_copy, settle
from tests.waiting import LIMIT, pilot_until
from zymi_tui.events.location import SqliteStore
from zymi_tui.tui.actions import Act, ActionScreen, HelpScreen, KeyClash, all_actions


async def wait_screen(pilot: Pilot[Any], cls: type, timeout: float = LIMIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if isinstance(pilot.app.screen, cls):
            return pilot.app.screen
    raise AssertionError(f"{cls.__name__} did not open (on {type(pilot.app.screen).__name__})")


def footer_names(screen: Any) -> set[str]:
    return {fk.description for fk in screen.query(FooterKey) if fk.action != "command_palette"}


async def help_names(pilot: Pilot[Any]) -> set[str]:
    await pilot.press("f1")
    shown = await wait_screen(pilot, HelpScreen)
    source = shown.query_one(Markdown).source
    await pilot.press("escape")
    await pilot.pause()
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \| ([^|]+?) \|$", source, re.M)
    return {name for key, name, _ in rows if key != "key"}


async def palette_hits(
    pilot: Pilot[Any], query: str = "", *, until: Callable[[list[tuple[str, str | None]]], bool]
) -> list[tuple[str, str | None]]:
    """(text, help) of what the palette lists for `query`, read from its option list.

    The palette gathers its hits in a worker and shows them in batches, so the list is read until
    `until` holds or LIMIT passes; the caller asserts on what was read last."""
    await pilot.press("ctrl+p")
    palette = await wait_screen(pilot, CommandPalette)
    if query:
        await pilot.press(*query)
    deadline = time.monotonic() + LIMIT
    while True:
        await pilot.pause(0.05)
        options = palette.query_one(CommandList)
        hits = [(o.hit.text or "", o.hit.help) for o in options._options]  # type: ignore[attr-defined]
        if until(hits) or time.monotonic() > deadline:
            break
    await pilot.press("escape")
    await pilot.pause()
    return hits


async def check_screen(pilot: Pilot[Any], screen: Any) -> int:
    registry = all_actions(screen)
    assert registry, f"{type(screen).__name__} declares no actions"
    names = {a.name for a in registry}
    sentences = {a.sentence for a in registry}
    await pilot_until(pilot, lambda: footer_names(screen) == names, f"{type(screen).__name__}'s footer")
    assert await help_names(pilot) == names, type(screen).__name__

    def ours(hits: list[tuple[str, str | None]]) -> set[str]:
        return {text for text, help_ in hits if help_ in sentences}

    listed = ours(await palette_hits(pilot, until=lambda hits: ours(hits) == names))
    assert listed == names, type(screen).__name__
    return len(names)


async def test_dashboard_palette_help_and_footer_list_the_same_actions(tmp_path: Path) -> None:
    from zymi_tui.tui.app import MainScreen
    from zymi_tui.tui.inspector import InspectorScreen
    from zymi_tui.tui.plot import ContextPlot
    from zymi_tui.tui.tuning.compare_screen import CompareScreen
    from zymi_tui.tui.tuning.editor import TuningScreen
    from zymi_tui.tui.tuning.sweep_screen import SweepScreen

    db = scenario_copy("coding_default", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        main = await settle(app, pilot)
        for key in ("K", "R", "X", "W", "C", "P", "d", "i"):
            assert key in {a.keys for a in all_actions(main)}
        checked = {MainScreen: await check_screen(pilot, main)}
        await pilot.press("tab", "tab", "right")  # the plot: pick its first LLM call
        assert isinstance(app.focused, ContextPlot) and app.focused.picked is not None
        for key, cls in (("i", InspectorScreen), ("K", TuningScreen), ("X", CompareScreen), ("W", SweepScreen)):
            await pilot.press(key)
            screen = await wait_screen(pilot, cls)
            await pilot.pause(0.3)
            checked[cls] = await check_screen(pilot, screen)
            await pilot.press("escape")
            if cls in (CompareScreen, SweepScreen):  # the first Esc cancels a running replay
                await pilot.pause(0.2)
                if not isinstance(app.screen, MainScreen):
                    await pilot.press("escape")
            await wait_screen(pilot, MainScreen)
        print(f"checked {len(checked)} screens: {checked}")


@pytest.mark.parametrize(
    ("query", "expected"),
    [("fork", {"Fork", "Compare fork", "Parent/fork"}), ("sweep", {"Sweep"}), ("resume", {"Fork"}),
     ("profile", {"Profiles"}), ("export", {"Export"})],
)  # fmt: skip
async def test_palette_finds_actions_by_what_they_do(tmp_path: Path, query: str, expected: set[str]) -> None:
    db = scenario_copy("coding_default", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        ours = {a.sentence for a in all_actions(main)}

        def found(hits: list[tuple[str, str | None]]) -> set[str]:
            return {text for text, help_ in hits if help_ in ours}

        hits = await palette_hits(pilot, query, until=lambda hits: expected <= found(hits))
        assert expected <= found(hits), found(hits)


async def test_palette_entry_runs_the_action(tmp_path: Path) -> None:
    from zymi_tui.tui.tuning.sweep_screen import SweepScreen

    db = scenario_copy("coding_default", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p", *"sweep")
        palette = await wait_screen(pilot, CommandPalette)

        def first_hit() -> str:
            options = palette.query_one(CommandList)._options  # type: ignore[attr-defined]
            return str(options[0].hit.text) if options else ""

        await pilot_until(pilot, lambda: first_hit() == "Sweep", "Sweep at the top of the palette's hits")
        await pilot.press("enter")
        await wait_screen(pilot, SweepScreen)
        await pilot.press("escape")
        await pilot.pause(0.2)


def test_a_key_that_can_never_fire_is_refused_when_declared() -> None:
    for key, has_input in (("ctrl+p", False), ("ctrl+q", False), ("ctrl+m", False), ("ctrl+e", True),
                           ("ctrl+left", True), ("ctrl+k", True)):  # fmt: skip
        with pytest.raises(KeyClash):
            type("Bad", (ActionScreen,), {"HAS_INPUT": has_input, "ACTIONS": (Act(key, "x", "X", "x."),),
                                           "action_x": lambda self: None})  # fmt: skip
    with pytest.raises(KeyClash, match="no method"):
        type("Bad", (ActionScreen,), {"ACTIONS": (Act("z", "nothing", "Z", "z."),)})


async def test_chat_screens_list_the_same_actions(tmp_path: Path) -> None:
    from tests.test_chat_support import chat_app, demo_project
    from zymi_tui.tui.chat.context_view import ContextScreen
    from zymi_tui.tui.chat.screen import ChatScreen

    app = chat_app(demo_project(tmp_path))
    async with app.run_test(size=(150, 46)) as pilot:
        chat = await wait_screen(pilot, ChatScreen)
        await check_screen(pilot, chat)
        await pilot.press(*"hello", "enter")
        await pilot_until(pilot, lambda: not chat.busy, "the turn's end")
        await pilot.press("f2")
        ctx = await wait_screen(pilot, ContextScreen)
        await check_screen(pilot, ctx)
        await pilot.press("escape")
        await wait_screen(pilot, ChatScreen)
        await asyncio.sleep(0)


async def test_knob_editor_keys_work_with_the_cursor_in_a_knob(tmp_path: Path) -> None:
    """PgUp/PgDn pick calls, ctrl+z undoes, ctrl+o exports, ctrl+t applies to project.yml: all typed in a knob."""
    import json

    from textual.widgets import Input, Static

    from tests.conftest import ORACLE
    from zymi_tui.events.store import EventReader
    from zymi_tui.tui.tuning.app import TuningApp
    from zymi_tui.tui.tuning.editor import TuningScreen
    from zymi_tui.tui.tuning.editor_parts import ConfirmApply

    db = scenario_copy("coding_default", tmp_path)
    project = db.parent / "project"
    stream = json.loads((ORACLE / "coding_default" / "expected.json").read_text())[0]["stream_id"]
    original = (project / "project.yml").read_text()

    def make(reader: EventReader) -> TuningScreen:
        return TuningScreen(reader, stream, project=project)

    app = TuningApp(SqliteStore(db), make)
    async with app.run_test(size=(160, 50)) as pilot:
        editor = await wait_screen(pilot, TuningScreen)
        await pilot_until(pilot, lambda: editor.curve is not None, "the editor's curve")
        while not (isinstance(app.focused, Input) and app.focused.id == "knob-observation_window"):
            await pilot.press("tab")
        knob = app.focused
        last = editor.picked
        assert last > 1
        await pilot.press("pageup", "pageup")
        assert editor.picked == last - 2 and app.focused is knob
        await pilot.press("pagedown")
        assert editor.picked == last - 1 and app.focused is knob
        before = knob.value
        await pilot.press("end", *["backspace"] * len(before), "3")
        assert knob.value == "3"
        await pilot.press("ctrl+z")  # one edit per keystroke: each ctrl+z takes one back
        await pilot_until(pilot, lambda: knob.value != "3", "the edit undone")
        assert app.focused is knob
        for _ in range(len(before) + 1):
            if knob.value == before:
                break
            await pilot.press("ctrl+z")
            await pilot.pause(0.1)
        assert knob.value == before
        await pilot.press("end", *["backspace"] * len(before), "3")
        await pilot.press("ctrl+o")
        export = editor.query_one("#export", Static)
        await pilot_until(pilot, lambda: "observation_window: 3" in str(export.render()), "the exported block")
        await pilot.press("ctrl+t")
        await wait_screen(pilot, ConfirmApply)
        await pilot.press("n")
        await wait_screen(pilot, TuningScreen)
        assert (project / "project.yml").read_text() == original
        await pilot.press("ctrl+t")
        await wait_screen(pilot, ConfirmApply)
        await pilot.press("y")
        await wait_screen(pilot, TuningScreen)
        await pilot_until(pilot, lambda: (project / "project.yml").read_text() != original, "project.yml written")
        written = (project / "project.yml").read_text()
        assert written != original and "observation_window: 3" in written
