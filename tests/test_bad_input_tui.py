"""The dashboard on the hostile stores of test_bad_input: it loads, says rows were skipped, and keys work.

A stream id that is not UTF-8 once made the run's loader die in its worker (a text parameter SQLite
could not encode) and the dashboard waited for it forever.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import test_bad_input as hostile
from tests.tui_support import make_app, settle

KINDS = ["bad_utf8_stream_id", "bad_utf8_data", "blob_binary", "deep_json", "text_sequence"]


@pytest.mark.parametrize("kind", KINDS)
async def test_dashboard_reads_a_hostile_store(kind: str, tmp_path: Path) -> None:
    case = getattr(hostile, kind)(tmp_path)
    app = make_app(Path(case.store))
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        assert main.runs.rows, "the run is listed"
        assert main.events.rows, "the run's readable events are shown"
        banner = str(main.query_one("#banner").render())
        assert "unreadable row(s) skipped" in banner
        for key in ("down", "up", "tab", "down", "enter", "escape"):
            await pilot.press(key)
        await pilot.pause(0.2)
        assert main.trouble is None
    assert app.return_code in (None, 0)
