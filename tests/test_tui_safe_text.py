"""Store content is never markup: the inspector on text full of brackets shows it as written; cuts by cell."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from textual.widgets import DataTable, Static

from tests.hostile_stores import MARKUP, make_store
from tests.tui_support import make_app, settle
from tests.waiting import pilot_until
from zymi_tui.tui.inspector import InspectorScreen
from zymi_tui.tui.safe_text import clean, cut_cells, graphemes, safe_text


def test_markup_is_kept_as_written_and_escapes_are_shown() -> None:
    for text in ("[/x]", "[compacted history]", "[masked: read_file(a) → ok, 1204 chars]", "[[script:m5]] сообщение",
                 "#[derive(Debug)]", "[link=https://x]y[/link]"):  # fmt: skip
        assert safe_text(text).plain == text
    assert clean("a\x1b[2Jb\x00\u202e") == "a\\x1b[2Jb\\x00\\u202e"
    assert clean("two\nlines\tand tab") == "two\nlines\tand tab"
    assert clean("two\nlines", one_line=True) == "two lines"


def test_cuts_by_cells_between_graphemes() -> None:
    family = "👨\u200d👩\u200d👧"
    assert list(graphemes(f"e\u0301{family}🇫🇷x")) == ["e\u0301", family, "🇫🇷", "x"]
    assert cut_cells("漢字漢字", 5) == "漢字…" and cell_len(cut_cells("漢字漢字", 5)) == 5
    assert cut_cells(f"ab{family}cd", 4) == "ab…"  # the family is one wide grapheme: never half of it
    assert cut_cells("e\u0301e\u0301e\u0301", 2) == "e\u0301…"
    assert cut_cells("short", 10) == "short"


async def test_inspector_shows_bracketed_store_text_as_written(tmp_path: Path) -> None:
    db, _project = await make_store("markup", tmp_path / "markup", "coding_default")  # masking from call 12
    before = db.read_bytes()
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        await pilot.press("tab", "tab", "left", "i")  # the plot: its last call; inspect it
        rebuilt = lambda: isinstance(app.screen, InspectorScreen) and app.screen.rebuilt is not None  # noqa: E731
        await pilot_until(pilot, rebuilt, "the inspector's rebuild of the call")
        await pilot.pause()
        screen = app.screen
        table = screen.query_one(DataTable)
        texts = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]
        reasons = [str(table.get_row_at(i)[-2]) for i in range(table.row_count)]
        assert all(texts), "a row of the messages table is blank"
        assert any("[/x] [bold]b[/bold] [[a]]" in t for t in texts), texts
        masked = [t for t, r in zip(texts, reasons, strict=True) if r.startswith("masked")]
        assert masked and all(t.startswith("[") for t in masked), reasons  # the placeholder, as the model saw it
        for _ in range(table.row_count):  # walk every message: the one shown whole below never fails
            await pilot.press("down")
        body = str(screen.query_one("#message-text", Static).render())
        assert MARKUP.strip()[:40] in body, body[-400:]
        assert app.is_running
    assert db.read_bytes() == before
