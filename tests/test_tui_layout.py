"""Every screen at 80x24 and at 120x40, on a long store and on a hostile one, read as a terminal shows it: the
dashboard run in a pseudo-terminal, its output fed to a terminal emulator (pyte), each screen opened by its key.

On each screen: every table shows at least one data row, every knob input is visible or reached by Tab (the
panel scrolls to it), no plot's line is drawn past its frame, no axis is labelled with a raw float, the texts
named in issue 35 are whole. The chat (`zymi-tui demo`) shows its context curve beside or below the
conversation at 80x24."""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.hostile_stores import make_store
from tests.test_tui_painted import Terminal
from tests.waiting import LIMIT

SIZES = [(80, 24), (120, 40)]
# zymi's five context knobs (docs/context.md#knobs), each an input of the knob editor
KNOBS = ["observation_window", "soft_cap_chars", "hard_cap_chars", "min_tail_turns", "forget_after_turns"]
BRAILLE = re.compile(r"[\u2801-\u28ff]")
RAW_FLOAT = re.compile(r"(?<![\d.,])\d{3,}\.\d(?![\d%])")  # 26752.0, 137722.0: plotext's own tick labels
TAB, ESC = b"\t", b"\x1b"


def rows(term: Terminal) -> list[str]:
    """The screen's rows, one string cell per column (a wide character's second cell is a space); pyte's own
    `display` fails on a cell holding a lone combining mark, which the hostile store paints."""
    screen = term.screen
    return ["".join(screen.buffer[y][x].data or " " for x in range(screen.columns)) for y in range(screen.lines)]


def shown(term: Terminal) -> str:
    return "\n".join(rows(term))


def until(term: Terminal, ok: Callable[[str], bool], what: str) -> str:
    deadline = time.monotonic() + LIMIT
    while not ok(shown(term)):
        assert time.monotonic() < deadline, f"waited for {what}:\n{shown(term)}"
        term.pump(0.2)
    term.pump(0.4)  # the frame settles (a second paint after the data)
    return shown(term)


def plot_frames_hold(lines: list[str]) -> list[str]:
    """Lines where a plot's dots are drawn past its frame: a plotext box (┌──┐ … └──┘) holds its dots between
    its sides; a knob-editor curve row (│ left axis, dots) ends in its frame `│` right of its last dot."""
    bad = []
    boxes = []
    for y, line in enumerate(lines):
        for m in re.finditer(r"┌─+┐", line):
            bottom = next((b for b in range(y + 1, len(lines)) if lines[b][m.start() : m.start() + 1] == "└"), None)
            if bottom is not None:
                boxes.append((y, bottom, m.start(), m.end() - 1))
    for top, bottom, left, right in boxes:
        for y in range(top + 1, bottom):
            dots = [m.start() for m in BRAILLE.finditer(lines[y])]
            if dots and (min(dots) <= left or max(dots) >= right):
                bad.append(f"row {y}: dots outside the box {left}..{right}: {lines[y]!r}")
    in_box = {y for top, bottom, _, _ in boxes for y in range(top, bottom + 1)}
    for y, line in enumerate(lines):
        if y in in_box or not re.search(r"[┤│]\S*[\u2801-\u28ff]", line) or ("┤" not in line and "│" not in line):
            continue
        last = max(m.start() for m in BRAILLE.finditer(line))
        if "│" not in line[last + 1 :]:
            bad.append(f"row {y}: the curve runs to the edge, past any frame: {line!r}")
    return bad


def check_screen(term: Terminal, name: str, size: tuple[int, int]) -> list[str]:
    lines = rows(term)
    problems = [f"{name} {size}: {p}" for p in plot_frames_hold(lines)]
    floats = [m.group() for line in lines for m in RAW_FLOAT.finditer(line)]
    if floats and name in ("profiles", "sweep"):
        problems.append(f"{name} {size}: axis labelled with raw floats {floats[:3]}")
    return problems


def open_screen(term: Terminal, key: bytes, ready: Callable[[str], bool], what: str) -> str:
    term.press(key)
    return until(term, ready, what)


def back_to_dashboard(term: Terminal) -> None:
    term.press(ESC)
    until(term, lambda s: "─ Context · " in s and "Runs (" in s, "the dashboard again")


@pytest.fixture(params=["long", "hostile"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The bundled long coding run (with its project), or the oracle's compaction run rewritten with RTL text,
    emoji and combining marks in every text (tests/hostile_stores.py)."""
    if request.param == "long":
        shutil.copytree(ROOT / "sample_stores" / "coding_long", tmp_path / "long")
        return tmp_path / "long" / "events.db"
    db, _project = asyncio.run(make_store("unicode", tmp_path / "unicode"))
    return Path(db)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_screen_is_usable(store: Path, size: tuple[int, int], tmp_path: Path) -> None:
    term = Terminal(["-m", "zymi_tui", "observe", str(store)], tmp_path, size=size)
    problems: list[str] = []
    try:
        s = until(term, lambda s: "─ Context · last #" in s and "─ Pipeline" in s, "the dashboard")
        problems += check_screen(term, "dashboard", size)
        runs_top = next(y for y, line in enumerate(rows(term)) if "Runs (" in line)
        assert re.search(r"[✓✗…]", rows(term)[runs_top + 1]), "no run row under Runs:\n" + s
        if size[0] >= 120:
            footer = rows(term)[-1]
            assert "A Advice" in footer and "L Message life" in footer, footer
        # the inspector on the call the plot names; a data row of its Messages table
        s = open_screen(term, b"i", lambda s: "Messages sent" in s and re.search(r"│\s*1\s+A\s", s) is not None,
                        "the inspector's first message row")  # fmt: skip
        reason = re.search(r"kept \(turn masked by observation_window=\d+[^│]*", s)
        assert reason is None or reason.group().rstrip().endswith(")"), reason
        problems += check_screen(term, "inspector", size)
        back_to_dashboard(term)
        # the knob editor: every knob's input reached (Tab scrolls the panel to it)
        s = open_screen(term, b"K", lambda s: "context bytes per call" in s and "observation_window" in s, "K")
        problems += check_screen(term, "editor", size)
        seen = {k for k in KNOBS if k in s}
        for _ in range(2 * len(KNOBS) + 2):
            if len(seen) == len(KNOBS):
                break
            term.press(TAB)
            seen |= {k for k in KNOBS if k in shown(term)}
        assert seen == set(KNOBS), f"knobs never shown: {set(KNOBS) - seen}\n{shown(term)}"
        back_to_dashboard(term)
        # profiles: every profile's column, and a data row
        s = open_screen(term, b"X", lambda s: re.search(r"LLM calls\s+\d+\s+\d+\s+\d+", s) is not None, "X")
        problems += check_screen(term, "profiles", size)
        back_to_dashboard(term)
        # sweep: a data row, its header whole
        s = open_screen(term, b"W", lambda s: re.search(r"★\s+\d+\s+[\d,]+\s+[\d,]+", s) is not None, "W rows")
        assert "hard-cap" in s and re.search(r"\bhar\s*$", s, re.M) is None, s
        problems += check_screen(term, "sweep", size)
        back_to_dashboard(term)
        # message life and advice open with their content
        open_screen(term, b"L", lambda s: re.search(r"\d+ messages × \d+ calls", s) is not None, "L")
        problems += check_screen(term, "life", size)
        back_to_dashboard(term)
        open_screen(term, b"A", lambda s: "Findings" in s, "A")
        problems += check_screen(term, "advice", size)
        back_to_dashboard(term)
        open_screen(term, b"?", lambda s: "zymi-tui observe" in s, "? help")
        back_to_dashboard(term)
    finally:
        code = term.close()
    assert problems == [], "\n".join(problems)
    assert code == 0


def test_the_chat_shows_its_curve_at_80x24(tmp_path: Path) -> None:
    term = Terminal(["-m", "zymi_tui", "demo", str(tmp_path / "demo")], tmp_path, size=(80, 24))
    try:
        until(term, lambda s: "message (Enter sends" in s, "the chat")
        term.press(b"hello\r")
        s = until(term, lambda s: "─ Context" in s and "done." in s, "the chat's curve after a turn")
        assert "message (Enter sends" in s or "hello" in s
        assert plot_frames_hold(rows(term)) == []
    finally:
        term.close()


def test_the_sample_banner_and_the_runs_rows_are_whole_at_80x24(tmp_path: Path) -> None:
    """Bare `zymi-tui` in a folder with no store opens the bundled sample: its banner's sentence is shown to its
    end, and each runs row shows its text whole or ends in "…", never cut mid-word at the panel's edge."""
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    term = Terminal(["-m", "zymi_tui"], empty, size=(80, 24))
    try:
        s = until(term, lambda s: "Runs (" in s and "─ Context · last #" in s, "the sample dashboard")
        banner = " ".join(line.strip() for line in rows(term)[:3])
        assert "SAMPLE store" in banner and "d: the demo chat." in banner, banner
        top = next(y for y, line in enumerate(rows(term)) if "Runs (" in line)
        end = rows(term)[top].index("╮")  # the runs panel's right border
        listed = [line[: end + 1] for line in rows(term)[top + 1 :] if "turn" in line[:end] or "✓" in line[:end]]
        assert listed, s
        cut = [line for line in listed if re.search(r"[A-Za-z0-9]\s?│$", line.rstrip())]
        assert cut == [], "\n".join(cut)
    finally:
        term.close()
