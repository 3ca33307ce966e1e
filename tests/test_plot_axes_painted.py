"""The context plot's axes as painted: at 80x24 the chat's plot is 9 rows tall, and its right axis (input
tokens) must still carry a figure a user can read, not "0" alone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from textual.app import App

from tests.test_chat_support import chat_app, chat_screen, demo_project, send, zymi_raw
from zymi_tui.tui.plot import ContextPlot

UNITS = {"": 1, "k": 1_000, "M": 1_000_000}


def painted_rows(app: App[Any], plot: ContextPlot) -> list[str]:
    """The plot's rows as the terminal shows them, its border included."""
    strips = app.screen._compositor.render_strips()
    region = plot.region
    return [strips[y].text[region.x : region.right] for y in range(region.y, region.bottom)]


def figure(label: str) -> float:
    """An axis label read as a person reads it: "4k" is 4000, "1.5k" 1500."""
    found = re.fullmatch(r"([0-9.]+)([kM]?)", label)
    assert found, label
    return float(found[1]) * UNITS[found[2]]


def agent_input_tokens(project: Path) -> list[int]:
    """The input tokens of every agent call (iteration > 0) as real zymi reads the store."""
    tokens, iteration = [], 0
    for event in zymi_raw(project):
        kind = event["kind"]
        if kind["type"] == "LlmCallStarted":
            iteration = kind["data"]["iteration"]
        elif kind["type"] == "LlmCallCompleted" and iteration > 0 and kind["data"].get("usage"):
            tokens.append(kind["data"]["usage"]["input_tokens"])
    return tokens


async def test_the_token_axis_has_a_figure_above_0_at_80x24(tmp_path: Path) -> None:
    project = demo_project(tmp_path)
    app = chat_app(project)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await chat_screen(pilot)
        await send(pilot, "audit all modules")
        await pilot.pause(0.3)
        rows = painted_rows(app, screen.query_one("#chat-plot", ContextPlot))
    inner = [row[1:-1].rstrip() for row in rows[1:-1]]  # the plot's border left out
    right = [found[1] for row in inner if (found := re.search(r"[┤├]([0-9.]+[kM]?)$", row))]
    left = [found[1] for row in inner if (found := re.match(r"\s*([0-9.]+[kM]?)[┤├]", row))]
    shown = "\n".join(rows)
    tokens = max(agent_input_tokens(project))
    assert tokens > 1000, tokens  # the demo's audit sends thousands of tokens: the axis needs a figure
    assert "0" in right and len(right) >= 2, f"the right axis shows {right}:\n{shown}"
    top = max(map(figure, right))
    assert tokens / 3 <= top <= tokens * 1.08, (top, tokens, shown)  # its top figure is of the tokens' size
    assert "0" in left and max(map(figure, left)) > 0, shown  # the chars' axis is kept
    assert "input tokens →" in rows[-1], rows[-1]  # and the legend
