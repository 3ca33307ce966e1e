"""No silent failure: a worker that cannot do its job says why, where it was working and in a notification."""

from __future__ import annotations

import time
from pathlib import Path

from tests.tui_support import make_app, scenario_copy, settle
from zymi_tui.tui.plot import ContextPlot


async def test_a_bad_project_yml_is_said_not_swallowed(tmp_path: Path) -> None:
    db = scenario_copy("coding_default", tmp_path)
    project_yml = db.parent / "project" / "project.yml"
    project_yml.write_text(project_yml.read_text() + "\nruntime: [this is: not a mapping\n")
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        plot = main.query_one(ContextPlot)
        deadline = time.monotonic() + 20
        while not app._notifications and time.monotonic() < deadline:
            await pilot.pause(0.1)
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors, "no notification"
        await pilot.pause(0.3)
        shown = " ".join(name for name, _ in plot.legend_items) + str(main.query_one("#banner").render())
        assert "project.yml" in " ".join(n.message for n in errors) or "project.yml" in shown, errors[0].message
        assert plot.legend_items[0][0].startswith("⚠ masking not rebuilt"), plot.legend_items
        await pilot.press("tab", "down", "up")  # still usable
        assert app.is_running
