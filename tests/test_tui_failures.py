"""No silent failure: a worker that cannot do its job says why, where it was working and in a notification."""

from __future__ import annotations

from pathlib import Path

from tests.tui_support import make_app, scenario_copy, settle
from tests.waiting import pilot_until
from zymi_tui.tui.plot import ContextPlot


async def test_a_bad_project_yml_is_said_not_swallowed(tmp_path: Path) -> None:
    db = scenario_copy("coding_default", tmp_path)
    project_yml = db.parent / "project" / "project.yml"
    project_yml.write_text(project_yml.read_text() + "\nruntime: [this is: not a mapping\n")
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        plot = main.query_one(ContextPlot)
        await pilot_until(pilot, lambda: any(n.severity == "error" for n in app._notifications), "an error notice")
        errors = [n for n in app._notifications if n.severity == "error"]

        def warned() -> bool:  # the plot is drawn with the run first; the warning comes with the masking check
            return bool(plot.legend_items) and plot.legend_items[0][0].startswith("⚠ masking not rebuilt")

        await pilot_until(pilot, warned, "the plot's legend to lead with the masking warning")
        shown = " ".join(name for name, _ in plot.legend_items) + str(main.query_one("#banner").render())
        assert "project.yml" in " ".join(n.message for n in errors) or "project.yml" in shown, errors[0].message
        assert plot.legend_items[0][0].startswith("⚠ masking not rebuilt"), plot.legend_items
        await pilot.press("tab", "down", "up")  # still usable
        assert app.is_running
