"""The knob editor's curve at 80x24 after an edit: every legend item is painted whole (the soft cap's
orange line and the picked call's bar are explained), none cut off at the pane's edge."""

from __future__ import annotations

from pathlib import Path

from tests.test_life_advice_tui import dashboard_ready, open_by_key
from tests.tui_support import make_app, scenario_copy
from tests.waiting import pilot_until
from zymi_tui.tui.tuning.curve_view import CurveView
from zymi_tui.tui.tuning.editor import TuningScreen

ITEMS = ["⣿ recorded", "⣿ what-if (estimated)", "│ compaction", "│ picked", "─ soft cap"]


async def test_the_edited_curve_legend_is_whole_at_80x24(tmp_path: Path) -> None:
    db = scenario_copy("coding_compaction", tmp_path)  # project.yml: soft cap 8000, under the curve's top
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await dashboard_ready(pilot)
        screen = await open_by_key(pilot, "K", TuningScreen, lambda s: bool(s.query_one(CurveView).curve))
        curve = screen.query_one(CurveView)
        screen.query_one("#knob-observation_window").focus()
        await pilot.press("end", "backspace", "backspace", "3")  # 10 -> 3: a what-if curve

        def painted() -> list[str]:
            strips = app.screen._compositor.render_strips()
            r = curve.region
            return [str(strips[y].text)[r.x : r.right] for y in range(r.y, r.bottom)]

        await pilot_until(pilot, lambda: curve.edited and any("what-if" in row for row in painted()), "what-if")
        await pilot.pause(0.5)
        rows = painted()
    head = "\n".join(rows[:4])
    missing = [item for item in ITEMS if item not in head]
    assert missing == [], f"{missing} not painted in:\n" + "\n".join(rows)
    assert rows[0].strip() in ("context bytes per call", "context bytes per call · what-if: same trajectory assumed")
