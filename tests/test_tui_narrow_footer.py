"""The command palette's hint (the way to every action) stays whole on the footer of every screen at 80
columns, every other hint is whole or absent (never cut mid-word), and the PNG screenshots show each
character on its terminal cell (scripts/screenshots.py)."""

from __future__ import annotations

import html
import importlib.util
import itertools
import re
from pathlib import Path
from types import ModuleType

import pytest
from textual.app import App

from tests.tui_support import make_app, scenario_copy, settle
from tests.waiting import pilot_until

ROOT = Path(__file__).resolve().parents[1]
PALETTE = "▏^p palette"
SCREENS = [  # keys from the dashboard (the plot's first call picked), and the screen they open
    ((), "MainScreen"),
    (("i",), "InspectorScreen"),
    (("K",), "TuningScreen"),
    (("K", "tab"), "TuningScreen"),  # the cursor in a knob: the editor's own keys
    (("X",), "CompareScreen"),
    (("W",), "SweepScreen"),
    (("A",), "AdviceScreen"),
    (("L",), "LifeScreen"),
    (("slash",), "MainScreen"),  # the search box open
]


def bottom_row(app: App[None]) -> str:
    """The screen's last row as painted (what a terminal shows there)."""
    return str(app.screen._compositor.render_strips()[-1].text)


def hints(app: App[None]) -> set[str]:
    """Every hint a footer of the screens open may show, whole: `key description` of each shown binding."""
    found = set()
    for screen in app.screen_stack:
        for _, binding, _, _ in screen.active_bindings.values():
            if binding.show:
                found.add(f"{app.get_key_display(binding)} {binding.description}".strip())
    return found


def painted_hints(row: str) -> list[str]:
    """The hints on a painted footer row, left of the palette's (hints are two spaces apart)."""
    left = row.rstrip().removesuffix(PALETTE)
    return [hint for hint in re.split(r"\s{2,}", left.strip()) if hint]


def footer_drawn(app: App[None]) -> bool:
    """The footer painted with its hints (they are shown once measured) and the palette's."""
    row = bottom_row(app)
    return PALETTE in row and len(painted_hints(row)) >= 3


async def footer_of(db: Path, size: tuple[int, int], keys: tuple[str, ...], screen: str) -> tuple[str, set[str]]:
    """The bottom row once `keys` (pressed on the dashboard) have opened `screen` and it has settled, and
    the hints its screens have."""
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("tab", "tab", "right")
        for key in keys:
            await pilot.press(key)
        await pilot_until(pilot, lambda: type(app.screen).__name__ == screen, f"{screen} after {keys}")
        await pilot_until(pilot, lambda: footer_drawn(app), f"the footer of {screen} after {keys}")
        return bottom_row(app), hints(app)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_every_hint_is_whole_or_absent_and_the_palette_last_on_every_screen(
    size: tuple[int, int], tmp_path: Path
) -> None:
    db = scenario_copy("coding_compaction", tmp_path)
    for keys, screen in SCREENS:
        row, whole = await footer_of(db, size, keys, screen)
        assert row.rstrip().endswith(PALETTE), (keys, row)
        assert len(row) == size[0]
        shown = painted_hints(row)
        assert set(shown) <= whole, (keys, row, set(shown) - whole)  # a hint cut mid-word is none of them
        if size[0] == 120 and screen == "MainScreen" and not keys:
            assert {"A Advice", "L Message life", "X Profiles"} <= set(shown)  # what fits is shown (issue 35: A, L)


async def test_hints_come_back_when_the_terminal_widens(tmp_path: Path) -> None:
    db = scenario_copy("coding_compaction", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot_until(pilot, lambda: footer_drawn(app), "the footer")
        narrow = painted_hints(bottom_row(app))
        assert "X Profiles" not in narrow and set(narrow) <= hints(app)
        await pilot.resize_terminal(120, 40)
        await pilot_until(pilot, lambda: "X Profiles" in painted_hints(bottom_row(app)), "more hints at 120 columns")
        assert painted_hints(bottom_row(app))[: len(narrow)] == narrow  # in the same order, none moved
        await pilot.resize_terminal(80, 24)
        await pilot_until(pilot, lambda: painted_hints(bottom_row(app)) == narrow, "the 80-column hints again")


def _screenshots() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts" / "screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_png_puts_every_character_on_its_cell(tmp_path: Path) -> None:
    """cairosvg ignores `textLength`, so a run drawn at its font's advance spilled past its column."""
    db = scenario_copy("coding_compaction", tmp_path)
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("K", "tab")
        await pilot_until(pilot, lambda: PALETTE in bottom_row(app), "the knob editor's footer")
        svg = app.export_screenshot()
    line = r'<text [^>]*x="([0-9.]+)" y="([0-9.]+)"[^>]*clip-path="url\(#[^)]*-line-[0-9]+\)"[^>]*>([^<]*)</text>'
    texts = re.findall(line, _screenshots().png_svg(svg))  # the terminal's lines (not the window's title)
    cells = [(float(x), float(y), html.unescape(body)) for x, y, body in texts]
    assert cells and all(len(body) == 1 and not body.isspace() for _, _, body in cells), "not a character a text"
    rows: dict[float, list[float]] = {}
    for x, y, _ in cells:
        rows.setdefault(y, []).append(x)
    step = min(b - a for xs in rows.values() for a, b in itertools.pairwise(sorted(xs)) if b > a)
    left = min(x for x, _, _ in cells)
    grid: dict[float, dict[int, str]] = {}
    for x, y, char in cells:
        col = (x - left) / step
        assert abs(col - round(col)) < 0.01, (x, char)  # every character on the terminal's grid
        grid.setdefault(y, {})[round(col)] = char
    assert max(col for row in grid.values() for col in row) <= 79  # nothing drawn past column 80
    bottom = grid[max(grid)]
    footer = "".join(bottom.get(col, " ") for col in range(80))  # (a space is a cell left undrawn)
    assert footer.rstrip().endswith(PALETTE), footer
