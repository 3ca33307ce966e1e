"""`raw_lines.page_lines` (a page of `--raw` lines in one piece) writes what the row-at-a-time path
writes, or declines the page: checked against `with_sequence`/`checked_stream_id` on rows zymi wrote and
on rows that differ from zymi's layout one way each, and against real `zymi events --raw`."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zymi_tui.events.raw_lines import page_lines
from zymi_tui.events.row_envelope import LeanError, checked_stream_id, with_sequence
from zymi_tui.events.store import RawRow

ORACLE = Path(__file__).parent / "oracle"
ZYMI = Path(sys.executable).parent / "zymi"


def stored_rows(db: Path) -> list[RawRow]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return list(con.execute("SELECT id, stream_id, sequence, data FROM events ORDER BY id"))
    finally:
        con.close()


def one_at_a_time(rows: list[RawRow]) -> bytes | None:
    """The row-at-a-time path's lines; None when it skips a row (a page with a bad row is never made whole)."""
    lines = []
    for _, _, seq, data in rows:
        try:
            lines.append(with_sequence(data, checked_stream_id(data), seq))
        except LeanError:
            return None
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("scenario", ["coding_default", "memory", "chat_profile"])
def test_a_page_zymi_wrote_is_made_whole_as_zymi_lists_it(scenario: str, tmp_path: Path) -> None:
    db = ORACLE / scenario / "events.db"
    rows = stored_rows(db)
    made = page_lines(rows)
    assert made is not None  # the fast path is taken on zymi's own rows
    assert made == one_at_a_time(rows)
    project = tmp_path / "p"
    (project / ".zymi").mkdir(parents=True)
    shutil.copy(db, project / ".zymi" / "events.db")
    zymi = subprocess.run(
        [str(ZYMI), "--no-venv", "events", "-d", str(project), "--raw", "-l", "100000000"],
        capture_output=True,
        check=True,
    )
    assert made == zymi.stdout


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


# one way each that a row can differ from what zymi writes: (what, edit of the first row's stored text)
VARIANTS: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "uppercase id": lambda d, r: _edit(d, r["id"], r["id"].upper()),
    "braced id": lambda d, r: _edit(d, f'"{r["id"]}"', f'"{{{r["id"]}}}"'),
    "32-hex id": lambda d, r: _edit(d, r["id"], r["id"].replace("-", "")),
    "bad id": lambda d, r: _edit(d, r["id"], "x" + r["id"][1:]),
    "hyphen moved": lambda d, r: _edit(d, r["id"], r["id"][:7] + "-" + r["id"][7] + r["id"][9:]),
    "space in id": lambda d, r: _edit(d, r["id"], r["id"][:2] + " " + r["id"][3:]),
    "month 13": lambda d, r: _edit(d, r["timestamp"], r["timestamp"][:5] + "13" + r["timestamp"][7:]),
    "hour 25": lambda d, r: _edit(d, r["timestamp"], r["timestamp"][:11] + "25" + r["timestamp"][13:]),
    "offset timestamp": lambda d, r: _edit(d, r["timestamp"], r["timestamp"][:-1] + "+00:00"),
    "micro timestamp": lambda d, r: _edit(d, r["timestamp"], r["timestamp"][:26] + "Z"),
    "arabic digit": lambda d, r: _edit(d, r["timestamp"], "\u0662" + r["timestamp"][1:]),
    "stored sequence 7": lambda d, r: _edit(d, '"sequence":0,', '"sequence":7,'),
    "space after colon": lambda d, r: _edit(d, '"source":', '"source": '),
    "unknown field": lambda d, r: _edit(d, '"source":', '"extra":1,"source":'),
    "unknown kind field": lambda d, r: _edit(d, '"kind":{', '"kind":{"extra":1,'),
    "keys reordered": lambda d, r: _edit(
        _edit(d, f'"id":"{r["id"]}",', ""), '"source":', f'"id":"{r["id"]}","source":'
    ),
    "escaped slash": lambda d, r: _edit(d, '"source":"', '"source":"\\/'),
    "unicode escape": lambda d, r: _edit(d, '"source":"', '"source":"\\u0041'),
    "truncated": lambda d, r: d[:-5],
    "empty correlation id": lambda d, r: _edit(d, f'"correlation_id":"{r["correlation_id"]}"', '"correlation_id":""'),
    "space in correlation id": lambda d, r: _edit(d, r["correlation_id"], " " + r["correlation_id"][1:]),
    "duplicate key": lambda d, r: _edit(d, '"source":', '"source":"a","source":'),
}


STILL_ZYMIS = {"uppercase id", "micro timestamp"}


@pytest.mark.parametrize("what", sorted(VARIANTS))
def test_a_page_with_a_row_unlike_zymis_is_declined(what: str) -> None:
    rows = stored_rows(ORACLE / "memory" / "events.db")[:50]
    gid, stream_id, seq, data = rows[0]
    try:
        edited = VARIANTS[what](data, json.loads(data))
    except AssertionError:
        pytest.skip(f"{what}: not applicable to this row")
    page = [(gid, stream_id, seq, edited), *rows[1:]]
    made = page_lines(page)
    if what in STILL_ZYMIS:  # forms zymi reads, written as msgspec writes them: made, as the row path makes them
        assert made is not None
        assert made == one_at_a_time(page)
    else:  # the text is unlike what msgspec writes, or the envelope unlike zymi's: the row path decides
        assert made is None


@pytest.mark.parametrize("column", ["stream_id", "sequence"])
def test_columns_unlike_zymis_types_decline_the_page(column: str) -> None:
    rows = stored_rows(ORACLE / "memory" / "events.db")[:20]
    gid, stream_id, seq, data = rows[0]
    bad: RawRow = (gid, b"s", seq, data) if column == "stream_id" else (gid, stream_id, "1", data)  # type: ignore[assignment]
    assert page_lines([bad, *rows[1:]]) is None


def test_a_stream_id_with_a_quote_declines_the_page() -> None:
    rows = stored_rows(ORACLE / "memory" / "events.db")[:20]
    gid, stream_id, seq, data = rows[0]
    quoted = stream_id + '"x'
    text = data.replace(f'"stream_id":"{stream_id}"', '"stream_id":"' + quoted.replace('"', '\\"') + '"', 1)
    assert page_lines([(gid, quoted, seq, text), *rows[1:]]) is None


def test_a_row_not_utf8_among_ascii_and_other_non_ascii_rows_declines_the_page() -> None:
    """The page read as bytes (`Utf8Row`): the rows that are not ASCII are the ones checked as UTF-8, so a byte
    that is not UTF-8 in the payload (which the envelope's decoder skips unchecked) still declines the page."""
    con = sqlite3.connect(f"file:{ORACLE / 'memory' / 'events.db'}?mode=ro", uri=True)
    try:
        rows = list(con.execute("SELECT id, stream_id, sequence, CAST(data AS BLOB) FROM events ORDER BY id"))[:40]
    finally:
        con.close()

    def with_key(row: tuple[Any, ...], key: bytes) -> tuple[Any, ...]:
        assert b'"data":{' in row[3]
        return (*row[:3], row[3].replace(b'"data":{', b'"data":{"' + key + b'":1,', 1))

    fine = [with_key(r, "caf\u00e9".encode()) if i % 9 == 4 else r for i, r in enumerate(rows)]
    assert page_lines(fine) == one_at_a_time([(g, s, q, d.decode()) for g, s, q, d in fine])  # non-ASCII made
    for at in (0, 20, 39):
        bad = [*fine[:at], with_key(fine[at], b"caf\xe9"), *fine[at + 1 :]]
        assert page_lines(bad) is None
