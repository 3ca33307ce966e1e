"""`events --raw` passes each row's stored JSON through with its real sequence, checking the envelope."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from zymi_tui.cli import main
from zymi_tui.events.kinds import Event, LlmCallStarted
from zymi_tui.events.sqlite_write import SqliteWriter


def make_store(path: Path, n: int) -> list[str]:
    async def go() -> list[str]:
        async with await SqliteWriter.open(path) as w:
            return [
                (
                    await w.append(
                        Event.new("s", LlmCallStarted(iteration=i, message_count=1, approx_context_chars=i), "t")
                    )
                ).event.id
                for i in range(n)
            ]

    return asyncio.run(go())


def set_data(path: Path, row_id: int, data: str) -> None:
    con = sqlite3.connect(path)
    con.execute("UPDATE events SET data = ? WHERE id = ?", (data, row_id))
    con.commit()
    con.close()


def raw(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[list[str], str]:
    assert main(["events", *args, "--all", "--raw"]) == 0
    got = capsys.readouterr()
    return got.out.splitlines(), got.err


def test_rows_as_stored_with_the_real_sequence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "e.db"
    ids = make_store(db, 3)
    con = sqlite3.connect(db)
    stored = [r[0] for r in con.execute("SELECT data FROM events ORDER BY id")]
    con.close()
    lines, _ = raw(capsys, str(db))
    assert lines == [s.replace('"sequence":0,', f'"sequence":{i},', 1) for i, s in enumerate(stored, 1)]
    assert [json.loads(line)["id"] for line in lines] == ids


def test_another_key_order_is_written_back_with_its_sequence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "e.db"
    make_store(db, 2)
    con = sqlite3.connect(db)
    obj = json.loads(con.execute("SELECT data FROM events WHERE id = 2").fetchone()[0])
    con.close()
    moved = {"kind": obj["kind"], **{k: v for k, v in obj.items() if k != "kind"}}
    moved["kind"]["data"]["sequence"] = 0  # a nested `sequence` is not the envelope's
    set_data(db, 2, json.dumps(moved, indent=1))
    lines, err = raw(capsys, str(db))
    assert err == ""
    second = json.loads(lines[1])
    assert second["sequence"] == 2 and second["kind"]["data"]["sequence"] == 0
    assert list(second) == list(moved)


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        (lambda o: o | {"id": "not-a-uuid"}, "id"),
        (lambda o: o | {"timestamp": "2026-13-02T15:08:22Z"}, "month"),
        (lambda o: o | {"correlation_id": 7}, "correlation_id"),
        (lambda o: {k: v for k, v in o.items() if k != "source"}, "source"),
    ],
)
def test_a_row_with_a_bad_envelope_is_named_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: object, reported: str
) -> None:
    db = tmp_path / "e.db"
    ids = make_store(db, 3)
    con = sqlite3.connect(db)
    obj = json.loads(con.execute("SELECT data FROM events WHERE id = 2").fetchone()[0])
    con.close()
    set_data(db, 2, json.dumps(change(obj)))  # type: ignore[operator]
    lines, err = raw(capsys, str(db))
    assert [json.loads(line)["id"] for line in lines] == [ids[0], ids[2]]
    assert "row 2" in err and reported in err


def test_braced_and_urn_uuids_are_read_as_zymi_reads_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "e.db"
    ids = make_store(db, 2)
    con = sqlite3.connect(db)
    obj = json.loads(con.execute("SELECT data FROM events WHERE id = 1").fetchone()[0])
    con.close()
    set_data(db, 1, json.dumps(obj | {"id": "{" + ids[0] + "}", "correlation_id": "urn:uuid:" + ids[1]}))
    lines, err = raw(capsys, str(db))
    assert err == "" and len(lines) == 2 and json.loads(lines[0])["id"] == "{" + ids[0] + "}"
