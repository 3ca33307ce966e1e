"""The run-info line with a long hostile stream id (RTL, wide and control characters, 100+ cells): it wrapped
over the line's four rows and pushed the run's status out of its first row. Now the id is cut in its middle
(both ends shown), the whole id in the line's tooltip; read from the screen as painted, at 80x24."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from textual.widgets import Static

from tests.hostile_stores import LONG_ID, make_store
from tests.tui_support import make_app, settle
from tests.waiting import pilot_until


async def test_a_long_hostile_id_is_cut_in_its_middle_and_whole_in_the_tooltip(tmp_path: Path) -> None:
    db, _ = await make_store("long_ids", tmp_path / "long_ids", "chat_profile")
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        info = app.screen.query_one("#run-info", Static)
        await pilot_until(pilot, lambda: "chat-42-" in str(info.render()), "the run-info line")
        region = info.region
        strips = app.screen._compositor.render_strips()
        painted = [str(strips[y].text)[region.x : region.right] for y in range(region.y, region.bottom)]
        tooltip = info.tooltip
    first = painted[0]
    assert "chat-42-" in first and "…" in first, painted  # the id's start, cut
    assert LONG_ID[-6:] in first, painted  # and its end
    assert "ok" in first.split(), painted  # the run's status on the id's row
    assert "\x1b" not in "".join(painted) and "\u202e" not in "".join(painted), painted
    assert all(cell_len(row) <= 80 for row in painted), painted
    assert isinstance(tooltip, str) and tooltip.startswith("chat-42-") and tooltip.endswith(LONG_ID[-20:]), tooltip
