"""Snapshots of the chat screen and its context view after two messages to the (deterministic) demo model.

Nothing time-dependent is shown: the plot's x axis is the call index, no timestamps or ids appear.
Update after an intended change with `pytest tests/test_chat_snapshot.py --snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.test_chat_support import SIZE, chat_app, chat_screen, demo_project, send
from tests.waiting import workers_idle
from zymi_tui.tui.chat.widgets import PromptInput

MESSAGES = ["hello, what is in billing?", "audit all modules"]


async def _two_messages(pilot: Pilot[Any]) -> None:
    screen = await chat_screen(pilot)
    screen.query_one("#prompt", PromptInput).cursor_blink = False
    for text in MESSAGES:
        await send(pilot, text)
    await pilot.pause(0.3)


def test_chat_screen_snapshot(tmp_path: Path, snap_compare: Any) -> None:
    app = chat_app(demo_project(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=_two_messages)


def test_context_view_snapshot(tmp_path: Path, snap_compare: Any) -> None:
    async def open_context(pilot: Pilot[Any]) -> None:
        await _two_messages(pilot)
        await pilot.press("f2", "right")  # the last call under the built-in `chat` profile
        await workers_idle(pilot)
        await pilot.pause(0.3)

    app = chat_app(demo_project(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=open_context)
