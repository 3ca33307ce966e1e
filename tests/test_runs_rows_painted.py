"""The runs list's rows as painted at 80x24 and 120x40: the pipeline's column is as wide as its names (a
"main" left 11 cells of padding and the prompt cut to "tas…" at 80 columns), and a chat stream's header
keeps its id and its peak and shows its turn count whole ("chat-42 · 16 t…" at 80 columns). The figures
come from the store itself (sqlite + json.loads), not from the app's own summaries."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from textual.app import App

from tests.hostile_stores import LONG_ID, make_store
from tests.tui_support import make_app, scenario_copy, settle
from tests.waiting import pilot_until
from zymi_tui.tui.widgets import RunsList

SIZES = [(80, 24), (120, 40)]


def runs_rows(app: App[None]) -> list[str]:
    """The runs list's lines as painted, inside its border."""
    strips = app.screen._compositor.render_strips()
    r = app.screen.query_one(RunsList).content_region
    return [strips[y].crop(r.x, r.right).text.rstrip() for y in range(r.y, r.bottom)]  # by cells (漢 is 2)


def peaks(db: Path) -> dict[str, str]:
    """Each run stream's largest `approx_context_chars`, as `11.9k` (the store's rows read as JSON)."""
    out: dict[str, int] = {}
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        for stream, data in con.execute("SELECT stream_id, data FROM events WHERE kind_tag = 'llm_call_started'"):
            run = stream.split(":step:")[0]
            out[run] = max(out.get(run, 0), json.loads(data)["kind"]["data"]["approx_context_chars"])
    return {run: f"{chars / 1000:.1f}k" for run, chars in out.items()}


def turns(db: Path, stream: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return int(con.execute("SELECT COUNT(DISTINCT correlation_id) FROM events WHERE stream_id = ?", (stream,))
                   .fetchone()[0])  # fmt: skip


async def painted_rows(db: Path, size: tuple[int, int]) -> list[str]:
    app = make_app(db)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("end", "home")  # the runs list has the focus: its first row picked
        await pilot_until(pilot, lambda: "k" in runs_rows(app)[0], "the first row's peak")
        return runs_rows(app)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_a_run_row_shows_its_name_peak_and_prompt(tmp_path: Path, size: tuple[int, int]) -> None:
    db = scenario_copy("coding_compaction", tmp_path)
    with sqlite3.connect(db) as con:
        (data,) = con.execute("SELECT data FROM events WHERE kind_tag = 'pipeline_requested'").fetchone()
    request = json.loads(data)["kind"]["data"]
    (peak,) = peaks(db).values()
    row = (await painted_rows(db, size))[0]
    assert row.startswith("»✓ "), row
    words = request["pipeline"], peak, *f"task={request['inputs']['task']}".split()[:2]
    assert " ".join(words) in " ".join(row.split()), (row, words)  # "main 11.9k task=Read the"


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_a_chat_header_shows_its_id_peak_and_whole_turn_count(tmp_path: Path, size: tuple[int, int]) -> None:
    db = scenario_copy("chat_profile", tmp_path)
    rows = await painted_rows(db, size)
    header = next(row for row in rows if row[1:].startswith("✓ chat-42 "))
    assert peaks(db)["chat-42"] in header.split(), header
    assert f"{turns(db, 'chat-42')} turns" in header, header  # whole, never "16 t…"


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_a_long_hostile_chat_id_leaves_the_peak_in_view(tmp_path: Path, size: tuple[int, int]) -> None:
    db, _ = await make_store("long_ids", tmp_path / "long_ids", "chat_profile")
    rows = await painted_rows(db, size)
    header = next(row for row in rows if row[1:].startswith("✓ chat-42-"))
    assert "…" in header and LONG_ID[-10:] not in header, header  # the id is cut, marked
    assert peaks(db)["chat-42" + LONG_ID] in header.split(), header  # and the peak stays
    assert "\x1b" not in header and "\u202e" not in header, header
