"""A modal dialog's footer lists its own keys: the keys go to the modal alone, yet the fork dialog (`R`) and
the help (`?`) showed the dashboard's footer under them ("i Inspect  K Tune knobs"), keys that did nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_tui_narrow_footer import PALETTE, bottom_row, painted_hints
from tests.tui_support import make_app, scenario_copy, settle
from tests.waiting import pilot_until


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize(
    ("key", "modal", "own"), [("R", "ForkModal", "Esc Close"), ("question_mark", "HelpScreen", "Esc/q/?/F1 Close")]
)
async def test_a_modal_footer_lists_the_modal_keys(
    tmp_path: Path, size: tuple[int, int], key: str, modal: str, own: str
) -> None:
    db = scenario_copy("coding_compaction", tmp_path)
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot_until(pilot, lambda: PALETTE in bottom_row(app), "the dashboard's footer")
        dashboard = set(painted_hints(bottom_row(app)))
        await pilot.press(key)
        await pilot_until(pilot, lambda: type(app.screen).__name__ == modal, modal)
        await pilot_until(pilot, lambda: own in painted_hints(bottom_row(app)), f"{own!r} on the footer of {modal}")
        row = bottom_row(app)
        screen = app.screen
        shown = {
            f"{app.get_key_display(b)} {b.description}" for _, b, _, _ in screen.active_bindings.values() if b.show
        }
    assert set(painted_hints(row)) <= shown, row  # the modal's keys only
    assert not set(painted_hints(row)) & (dashboard - shown), row
    assert row.rstrip().endswith(PALETTE), row  # ctrl+p reaches a modal too
