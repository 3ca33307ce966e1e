"""`replay`'s table is streamed: each row is printed as it is computed, with the same content as the
rich `Table` it replaced.

tests/data/replay_tables/ holds what the rich table printed (commit 93d3a6a, `COLUMNS=1000` so that no
cell wrapped) for every oracle store: plain, `--tokens`, without a project (the store copied alone),
under `--profile chat`, and under tight caps (`--set hard_cap_chars=3000 --set soft_cap_chars=2500
--tokens`: simulated compactions, hard-cap failures, "would fail hard cap"). The layout changed on
purpose (fixed-width columns, the header on one line); the words of every line did not.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ORACLE
from zymi_tui.cli import main
from zymi_tui.commands.streamed_table import Cell, Column, StreamedTable
from zymi_tui.replay.store_replay import replay_store

TABLES = Path(__file__).parent / "data" / "replay_tables"
STORES = ("chat_profile", "coding_compaction", "coding_default", "fresh_mode", "hard_cap", "memory")
VARIANTS = {
    "plain": [],
    "tokens": ["--tokens"],
    "chat": ["--profile", "chat"],
    "noproject": [],
}
TIGHT = ["--set", "hard_cap_chars=3000", "--set", "soft_cap_chars=2500", "--tokens"]


def _words(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def _replay(db: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["replay", str(db), *argv]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("store", STORES)
def test_streamed_table_has_the_words_of_the_old_table(
    store: str, variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ORACLE / store / "events.db"
    if variant == "noproject":
        db = Path(shutil.copy(db, tmp_path / "events.db"))
    got = _replay(db, VARIANTS[variant], capsys)
    assert _words(got) == _words((TABLES / f"{store}__{variant}.txt").read_text())


@pytest.mark.parametrize("store", ["hard_cap", "coding_default"])
def test_streamed_table_under_tight_caps(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    got = _replay(ORACLE / store / "events.db", TIGHT, capsys)
    assert _words(got) == _words((TABLES / f"{store}__tight.txt").read_text())


def test_rows_are_printed_before_the_replay_ends(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first row is on stdout while the replay is still running (the store is not held)."""
    real = replay_store
    seen: list[str] = []

    async def watched(*a: Any, **k: Any) -> AsyncIterator[Any]:
        n = 0
        async for row in real(*a, **k):
            if n == 2:  # two rows given: both are out before the third is computed
                seen.append(capsys.readouterr().out)
            n += 1
            yield row

    monkeypatch.setattr("zymi_tui.commands.context_cmds.replay_store", watched)
    assert main(["replay", str(ORACLE / "coding_default" / "events.db")]) == 0
    first_two = seen[0].splitlines()
    assert first_two[0].split()[:3] == ["stream", "seq", "it"]
    assert [line.split()[:2] for line in first_two[1:]] == [["work", "1"], ["work", "5"]]


def test_columns_are_fixed_and_a_wide_cell_widens_its_column_from_there() -> None:
    lines: list[str] = []
    t = StreamedTable([Column("name"), Column("n", right=True, width=3), Column("note")], styled=False,
                      write=lines.append)  # fmt: skip
    t.row(["a", "1", ""])
    t.row(["abcdefgh", "22", Cell((("x", False), ("≠", True)))])
    t.row(["b", "12345", "y"])
    assert lines == [
        "name    n  note\n",
        "a       1\n",
        "abcdefgh   22  x≠\n",
        "b         12345  y\n",
    ]


def test_styles_only_on_a_terminal() -> None:
    for styled in (False, True):
        lines: list[str] = []
        t = StreamedTable([Column("v", right=True)], styled=styled, write=lines.append)
        t.row([Cell((("5", False), ("≠", True)))])
        assert ("\x1b[" in "".join(lines)) is styled
        assert lines[-1].replace("\x1b[31m", "").replace("\x1b[0m", "") == "5≠\n"


_CELL = st.text(alphabet=st.sampled_from("ab1 -~é漢\x1b"), max_size=9)


@settings(max_examples=300, deadline=None)
@given(
    rights=st.lists(st.booleans(), min_size=1, max_size=5),
    rows=st.lists(st.lists(st.one_of(_CELL, _CELL.map(lambda t: Cell(((t, False), ("≠", True))))), min_size=5,
                           max_size=5), max_size=8),
    styled=st.booleans(),
)  # fmt: skip
def test_a_row_is_the_line_its_cells_make(rights: list[bool], rows: list[list[str | Cell]], styled: bool) -> None:
    """Each row (cells of ASCII and wide text, red parts, cells wider than their column) is the line that
    `_line` alone makes of it, row after row as columns widen: the one-call format of the rows that fit
    changes no byte (on a terminal or not)."""
    columns = [Column(f"h{i}", right=r, width=2) for i, r in enumerate(rights)]
    got: list[str] = []
    table = StreamedTable(columns, styled=styled, write=got.append)
    alone = StreamedTable(columns, styled=styled, write=lambda _: None)
    want: list[str] = []
    for cells in rows:
        cells = cells[: len(columns)]
        table.row(cells)
        plain = [c.text if isinstance(c, Cell) else c for c in cells]
        shown = [c.styled() if isinstance(c, Cell) and styled else p for c, p in zip(cells, plain, strict=True)]
        want.append(alone._line(plain, shown) + "\n")
    assert got[1:] == want
