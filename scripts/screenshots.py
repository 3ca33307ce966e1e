"""Save SVG screenshots of every dashboard screen under screenshots/, and PNGs next to them.

    .venv/bin/python scripts/screenshots.py [--out screenshots] [--oracle tests/oracle]

Stores are COPIES (the bundled sample, and oracle scenarios when present). PNGs need `rsvg-convert` on the
PATH (Debian: librsvg2-bin) or cairosvg (`pip install cairosvg`); without either only SVGs are written.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from xml.sax.saxutils import escape  # noqa: E402

from rich.cells import get_character_cell_size  # noqa: E402
from textual.pilot import Pilot  # noqa: E402

from zymi_tui.events.location import SqliteStore  # noqa: E402
from zymi_tui.tui.app import DashboardApp, MainScreen  # noqa: E402
from zymi_tui.tui.inspector import InspectorScreen  # noqa: E402
from zymi_tui.tui.launch import sample_store  # noqa: E402
from zymi_tui.tui.target import Target  # noqa: E402

Step = Callable[[Pilot[None], MainScreen], Awaitable[None]]


def copy_scenario(src_db: Path, project: Path | None, dst: Path) -> Target:
    dst.mkdir(parents=True)
    db = dst / "events.db"
    with sqlite3.connect(f"file:{src_db}?mode=ro", uri=True) as s, sqlite3.connect(db) as d:
        s.backup(d)
    if project is not None and project.is_dir():
        shutil.copytree(project, dst / "project")
    return Target(SqliteStore(db), dst / "project" if project else None, None, f"screenshot store: {dst.name}")


async def ready(pilot: Pilot[None]) -> MainScreen:
    app = pilot.app
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        await pilot.pause(0.1)
        screen = app.screen
        if isinstance(screen, MainScreen) and screen.runs.summaries and not screen.run_loading and screen.verified:
            break
    main = app.screen
    assert isinstance(main, MainScreen)
    main.workers.cancel_group(main, "tail")
    await pilot.pause(0.5)
    app.clear_notifications()
    return main


async def shoot(target: Target, size: tuple[int, int], path: Path, step: Step | None = None) -> None:
    app = DashboardApp(target, theme="textual-dark")
    async with app.run_test(size=size) as pilot:
        main = await ready(pilot)
        if step is not None:
            await step(pilot, main)
        await pilot.pause(0.3)
        app.save_screenshot(filename=path.name, path=str(path.parent))
    print(f"wrote {path}")


async def expand(pilot: Pilot[None], main: MainScreen) -> None:
    await pilot.press("tab", "up", "enter")


async def inspect(pilot: Pilot[None], main: MainScreen) -> None:
    calls = [se for se in main.events.loaded() if se.event.tag == "llm_call_started"]
    main.events.jump_to(calls[len(calls) * 2 // 3].global_id)
    await pilot.press("i")
    screen = pilot.app.screen
    assert isinstance(screen, InspectorScreen)
    deadline = time.monotonic() + 30
    while screen.rebuilt is None and time.monotonic() < deadline:
        await pilot.pause(0.1)


async def pick_peak(pilot: Pilot[None], main: MainScreen) -> None:
    await pilot.press("tab", "tab", "left")  # the plot's last call: its figures in the plot's title


async def help_screen(pilot: Pilot[None], main: MainScreen) -> None:
    await pilot.press("question_mark")


def opened(screen_class: str, ready: Callable[[object], object] = lambda s: True, key: str = "") -> Step:
    """A step: press `key` (the screen's key on the dashboard) and wait until a `screen_class` is up and `ready`."""

    async def step(pilot: Pilot[None], main: MainScreen) -> None:
        await pilot.press(key)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            await pilot.pause(0.2)
            screen = pilot.app.screen
            if type(screen).__name__ == screen_class and ready(screen):
                break
        await pilot.pause(1.0)  # a last paint (plots are drawn after their data)
        pilot.app.clear_notifications()

    return step


# every screen a key of the dashboard opens (issue 35: each at 80x24 and at 120x40)
EVERY_SCREEN: dict[str, Step] = {
    "editor": opened("TuningScreen", lambda s: getattr(s, "form", None) is not None, "K"),
    "profiles": opened("CompareScreen", lambda s: getattr(s, "comparison", None) is not None, "X"),
    "sweep": opened("SweepScreen", lambda s: getattr(s, "result", None) is not None, "W"),
    "life": opened("LifeScreen", key="L"),
    "advice": opened("AdviceScreen", lambda s: getattr(s, "advice", None) is not None, "A"),
    "fork": opened("ForkModal", key="R"),
    "help": opened("HelpScreen", key="question_mark"),
}


async def chat_shot(size: tuple[int, int], path: Path, work: Path) -> None:
    """The chat on a demo project, after one turn: the conversation and its context curve."""
    from zymi_tui.engine.providers.demo_workspace import write_demo_project
    from zymi_tui.tui.chat.app import ChatApp
    from zymi_tui.tui.chat.session import ChatOptions

    root = work / f"demo-{size[0]}"
    root.mkdir(parents=True)
    write_demo_project(root, "demo")
    app = ChatApp(ChatOptions(project_dir=root), theme="textual-dark")
    async with app.run_test(size=size) as pilot:
        deadline = time.monotonic() + 60
        while type(app.screen).__name__ != "ChatScreen" and time.monotonic() < deadline:
            await pilot.pause(0.1)
        screen: Any = app.screen
        screen.query_one("#prompt").value = "audit all modules"
        await pilot.press("enter")
        while (screen.turn_worker is None or not screen.turn_worker.is_finished) and time.monotonic() < deadline:
            await pilot.pause(0.2)
        await pilot.pause(1.5)
        app.clear_notifications()
        app.save_screenshot(filename=path.name, path=str(path.parent))
    print(f"wrote {path}")


async def search(pilot: Pilot[None], main: MainScreen) -> None:
    await pilot.press("tab", "slash", *"write_memory", "enter")


# Textual's SVG sets each run of text on its cells with `textLength`, which cairosvg ignores: a run is
# drawn at the font's own advance (offline, "Fira Code" falls back to a proportional face), so block and
# box characters spill past their column (an input's border over the next panel, "^p palette" cut in
# two). For the PNG every character is a text of its own at the x of its cell on the terminal.
_TEXT = re.compile(r'<text ([^>]*?)x="([0-9.]+)"([^>]*?) textLength="([0-9.]+)"([^>]*)>([^<]*)</text>')


def _cell_by_cell(match: re.Match[str]) -> str:
    before, x, middle, length, after, body = match.groups()
    chars = html.unescape(body)
    widths = [max(1, get_character_cell_size(c)) for c in chars]
    cell = float(length) / max(1, sum(widths))
    out, at = [], float(x)
    for c, w in zip(chars, widths, strict=True):
        if not c.isspace():  # a space is its cell skipped: renderers strip a text's edge spaces (no-break too)
            out.append(f'<text {before}x="{at:.1f}"{middle}{after}>{escape(c)}</text>')
        at += w * cell
    return "".join(out)


def png_svg(svg_text: str) -> str:
    """The SVG as a PNG renderer should draw it: each character at its terminal cell."""
    return _TEXT.sub(_cell_by_cell, svg_text)


def to_png(svg: Path) -> bool:
    """rsvg-convert first: it falls back glyph by glyph to a face that has the character (braille, boxes in a
    monospace face); cairosvg draws a run in one face, without Fira Code a proportional one."""
    png = svg.with_suffix(".png")
    text = png_svg(svg.read_text(encoding="utf-8")).encode()
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", "-w", "1600", "-o", str(png)], input=text, check=True)
        return True
    try:
        import cairosvg  # type: ignore[import-not-found, import-untyped, unused-ignore]

        cairosvg.svg2png(bytestring=text, write_to=str(png), output_width=1600)
        return True
    except ImportError:
        return False


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "screenshots"))
    ap.add_argument("--oracle", default=str(ROOT / "tests" / "oracle"))
    args = ap.parse_args()
    os.environ["TZ"] = "UTC"
    time.tzset()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="zymi_tui_shots_"))
    oracle = Path(args.oracle)
    shots: list[tuple[str, Target, tuple[int, int], Step | None]] = []
    sample = sample_store()
    if sample is not None and isinstance(sample.store, SqliteStore):
        t = copy_scenario(sample.store.path, sample.project, work / "sample")
        shots += [("sample-main-120x40", t, (120, 40), None), ("sample-main-80x24", t, (80, 24), None)]
    for name in ("coding_compaction", "chat_profile", "coding_default", "memory"):
        if (oracle / name / "events.db").exists():
            t = copy_scenario(oracle / name / "events.db", oracle / name / "project", work / name)
            shots.append((f"{name}-main-120x40", t, (120, 40), None))
            if name == "coding_compaction":
                shots.append((f"{name}-main-80x24", t, (80, 24), None))
                shots.append((f"{name}-inspector-120x40", t, (120, 40), inspect))
                shots.append((f"{name}-inspector-80x24", t, (80, 24), inspect))
                for screen, opens in EVERY_SCREEN.items():
                    shots += [(f"{name}-{screen}-{w}x{h}", t, (w, h), opens) for w, h in ((80, 24), (120, 40))]
            if name == "coding_default":
                shots.append((f"{name}-expanded-120x40", t, (120, 40), expand))
                shots.append((f"{name}-help-120x40", t, (120, 40), help_screen))
            if name == "memory":
                shots.append((f"{name}-search-120x40", t, (120, 40), search))
    if (oracle / "coding_compaction" / "events.db").exists():  # a compaction whose summary grew (hostile store)
        from tests.hostile_stores import make_store

        db, project = await make_store("grew", work / "grew")
        t = Target(SqliteStore(db), project, None, "screenshot store: a compaction whose summary grew by 1,204 B")
        shots += [(f"grew-plot-{w}x{h}", t, (w, h), pick_peak) for w, h in ((80, 24), (120, 40), (200, 60))]
    pngs = 0
    try:
        for name, target, size, step in shots:
            svg = out / f"{name}.svg"
            await shoot(target, size, svg, step)
            pngs += to_png(svg)
        for w, h in ((80, 24), (120, 40)):
            svg = out / f"chat-{w}x{h}.svg"
            await chat_shot((w, h), svg, work)
            pngs += to_png(svg)
            shots.append((svg.stem, shots[0][1], (w, h), None))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(shots)} SVG screenshot(s), {pngs} PNG(s) in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
