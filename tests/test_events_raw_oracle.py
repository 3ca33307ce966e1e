"""`events --all --raw` on hostile stores, against readings that are not ours: a plain `sqlite3` + `json` reading
of the rule (a row zymi laid out passes through with its sequence put in; another writer's row is written back
compact; a row that is not UTF-8 or holds a lone surrogate is skipped and named), and real `zymi events --raw`
where every row is zymi's layout. One process and two (`raw_pair`), whole pages made at once and row by row."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from zymi_tui.events.kinds import Event, LlmCallStarted, ToolCallCompleted
from zymi_tui.events.raw_lines import page_lines
from zymi_tui.events.sqlite_write import SqliteWriter

ROOT = Path(__file__).parent.parent
ZYMI = Path(sys.executable).parent / "zymi"
# text a person or a tool really produces, in ids, payloads and `source`
TEXTS = ["\x00\x01\x08\x0c\x1b[2J\x1f\x7f\x85\x9f", "line\u2028sep\u2029", 'tab\tnl\ncr\rquote"back\\slash/',
         "é漢字👨\u200d👩\u200d👧 🇫🇷", "\u202eevil\u200f", "</script>&<b>", "\\u0041 \\ud800", "\ufeffbom"]  # fmt: skip
N = 4600  # pages of 2000 rows: the second holds another writer's rows


def _event(i: int) -> Event:
    text = TEXTS[i % len(TEXTS)]
    if i % 2:
        kind = ToolCallCompleted(call_id=f"c{i}", result=text * 3, result_preview=text, is_error=False, duration_ms=i)
        return Event.new(f"run-{i % 3}:step:{i % 5}", kind, text)
    return Event.new(f"run-{i % 3}", LlmCallStarted(iteration=i, message_count=1, approx_context_chars=i), text)


def zymis_rows(path: Path) -> Path:
    async def go() -> None:
        async with await SqliteWriter.open(path) as w:
            for i in range(N):
                await w.append(_event(i))

    asyncio.run(go())
    return path


def another_writers_rows(path: Path) -> None:
    """Rows 2001-2040 rewritten as other writers write them; then a lone surrogate, a BLOB, bytes not UTF-8."""
    con = sqlite3.connect(path)
    rows = con.execute("SELECT id, data FROM events WHERE id BETWEEN 2001 AND 2040").fetchall()
    for gid, data in rows:
        obj = json.loads(data)
        form = gid % 4
        if form == 0:  # Python's defaults: spaces, ASCII escapes
            text = json.dumps(obj)
        elif form == 1:  # another key order
            text = json.dumps(
                {"kind": obj["kind"], **{k: v for k, v in obj.items() if k != "kind"}}, ensure_ascii=False
            )
        elif form == 2:  # zymi's layout, escapes of its own
            text = data.replace("/", "\\/").replace("\u2028", "\\u2028").replace("é", "\\u00e9")
        else:  # zymi's layout, a space after the kind
            text = data.replace('"kind":{', '"kind": {')
        con.execute("UPDATE events SET data = ? WHERE id = ?", (text, gid))
    data = con.execute("SELECT data FROM events WHERE id = 2041").fetchone()[0]
    con.execute("UPDATE events SET data = ? WHERE id = 2041", (data.replace('"source":"', '"source":"\\udc80'),))
    con.execute("UPDATE events SET data = CAST(data AS BLOB) WHERE id = 2042")
    bad = con.execute("SELECT CAST(data AS BLOB) FROM events WHERE id = 2043").fetchone()[0]
    con.execute(
        "UPDATE events SET data = CAST(? AS TEXT) WHERE id = 2043", (bad.replace(b'"source":"', b'"source":"\xff'),)
    )
    con.commit()
    con.close()


def plain_reading(path: Path) -> tuple[bytes, list[int]]:
    """The listing by the rule, read with sqlite3 and json alone: (the lines, the ids of the rows skipped)."""
    con = sqlite3.connect(path)
    con.text_factory = bytes
    lines, skipped = [], []
    for gid, stream_id, seq, data in con.execute("SELECT id, stream_id, sequence, data FROM events ORDER BY id"):
        try:
            text = bytes(data).decode()
            obj = json.loads(text)
            json.dumps(obj, ensure_ascii=False).encode()  # a lone surrogate: not text zymi reads
        except (UnicodeError, ValueError):
            skipped.append(gid)
            continue
        head = f'{{"id":"{obj["id"]}","stream_id":"{stream_id.decode()}","sequence":0,'
        if text.startswith(head):
            lines.append(f"{head[:-2]}{seq},{text[len(head) :]}")
        else:
            lines.append(json.dumps({**obj, "sequence": seq}, ensure_ascii=False, separators=(",", ":")))
    con.close()
    return ("\n".join(lines) + "\n").encode(), skipped


def ours(db: Path, paired: bool, *pre: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "ZYMI_TUI_RAW_PAIR_IDS": "1" if paired else "1000000000"}
    argv = [*pre, sys.executable, "-m", "zymi_tui", "events", str(db), "--all", "--raw"]
    return subprocess.run(argv, capture_output=True, env=env, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return zymis_rows(tmp_path_factory.mktemp("hostile") / "events.db")


FORMS = [(False,), (True,), (True, "taskset", "-c", "0")]


@pytest.mark.parametrize("form", FORMS, ids=["one", "two", "two-on-one-core"])
def test_zymis_layout_with_hostile_text_is_what_zymi_lists(hostile: Path, form: tuple[bool, ...]) -> None:
    project = hostile.parent / "p"
    if not project.exists():
        (project / ".zymi").mkdir(parents=True)
        shutil.copy(hostile, project / ".zymi" / "events.db")
    zymi = subprocess.run(
        [str(ZYMI), "--no-venv", "events", "-d", str(project), "--raw", "-l", "100000000"],
        capture_output=True,
        check=True,
    )
    got = ours(hostile, bool(form[0]), *form[1:])  # type: ignore[arg-type]
    assert got.returncode == 0 and got.stderr == b""
    assert got.stdout == zymi.stdout
    assert got.stdout == plain_reading(hostile)[0]


def test_zymis_layout_with_hostile_text_is_made_a_page_at_once(hostile: Path) -> None:
    """The pages above went the fast way (`page_lines`), read as bytes as the listing reads them."""
    con = sqlite3.connect(hostile)
    rows = con.execute("SELECT id, stream_id, sequence, CAST(data AS BLOB) FROM events ORDER BY id").fetchall()
    con.close()
    for at in range(0, N, 2000):
        assert page_lines(rows[at : at + 2000]) is not None


@pytest.mark.parametrize("form", FORMS, ids=["one", "two", "two-on-one-core"])
def test_another_writers_rows_are_what_a_plain_reading_makes(
    hostile: Path, tmp_path: Path, form: tuple[bool, ...]
) -> None:
    db = tmp_path / "events.db"
    shutil.copy(hostile, db)
    another_writers_rows(db)
    want, skipped = plain_reading(db)
    assert skipped == [2041, 2043]
    got = ours(db, bool(form[0]), *form[1:])  # type: ignore[arg-type]
    assert got.returncode == 0
    assert got.stdout == want
    named = got.stderr.splitlines()
    assert len(named) == 2 and b"skipped unreadable row 2041 " in named[0] and b"row 2043 " in named[1]
