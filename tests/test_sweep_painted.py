"""The sweep screen as painted: the grid boxes show their whole values at 80 columns (the knob names took
35 of them: ",4,6,8,10,15,20" was shown of "2,4,6,8,10,15,20"), and the scatter plot is whole on screen: at
120x40 as the screen opens (it started at row 28 of 40, its lower half below the screen), at 80x24 once the
body is scrolled to its end (the plot was taller than the body)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App

from tests.tui_support import make_app, scenario_copy, settle
from tests.waiting import pilot_until

WINDOWS, CAPS = "2,4,6,8,10,15,20", "20k,40k,60k,100k,400k"  # typed in the boxes, replacing the defaults


def painted(app: App[None]) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def swept(tmp_path: Path, size: tuple[int, int], *keys: str) -> list[str]:
    """The screen once `W` has opened the sweep, the grid typed into its boxes has been swept, and `keys`."""
    app = make_app(scenario_copy("coding_compaction", tmp_path))
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("W")
        await pilot_until(pilot, lambda: getattr(app.screen, "result", None) is not None, "the first sweep")
        for value in (WINDOWS, CAPS):  # the cursor in the first box, then Tab to the second
            await pilot.press("ctrl+u", *value, "tab")
        await pilot.press("ctrl+r")
        done = lambda: not getattr(app.screen, "running", True) and any("35 points" in row for row in painted(app))  # noqa: E731
        await pilot_until(pilot, done, "the sweep of the grid typed")
        await pilot.press(*keys)
        await pilot.pause(0.5)  # the plot drawn after its data
        return painted(app)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_grid_boxes_show_their_whole_values(tmp_path: Path, size: tuple[int, int]) -> None:
    rows = await swept(tmp_path, size)
    text = "\n".join(rows)
    assert WINDOWS in text and CAPS in text, text
    assert "observation_window" in text and "soft_cap_chars" in text, text  # each box still named by its knob


@pytest.mark.parametrize(("size", "keys"), [((80, 24), ("end",)), ((120, 40), ())], ids=["80x24", "120x40"])
async def test_the_scatter_plot_is_whole_on_screen(
    tmp_path: Path, size: tuple[int, int], keys: tuple[str, ...]
) -> None:
    """At 80x24 End scrolls the body (Tab from the second box focused it) to its end."""
    rows = await swept(tmp_path, size, *keys)
    footer = len(rows) - 1
    title = next((y for y, row in enumerate(rows) if "sweep: lower-left is better" in row), None)
    top = next((y for y, row in enumerate(rows) if "┌─" in row), None)
    bottom = next((y for y, row in enumerate(rows) if "└─" in row), None)
    axis = next((y for y, row in enumerate(rows) if "total input tokens (est" in row), None)
    assert None not in (title, top, bottom, axis), "\n".join(rows)
    assert title < top < bottom < axis < footer, "\n".join(rows)  # type: ignore[operator]
    assert bottom - top >= 10, "\n".join(rows)  # type: ignore[operator]  # not squashed
