"""A kind's fields are read as zymi's serde reads them, strictly: a number written as text, a boolean
as 1, an integer as 2.0. The real zymi refuses such a store; every reader of ours refuses the row too
(a whole-event reader, a search's line, a replay), rather than coercing it."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.waiting import LIMIT
from zymi_tui.events.envelope import EventDecodeError, decode_event
from zymi_tui.events.kinds import KIND_BY_TAG
from zymi_tui.events.replay_view import decode_replay_row
from zymi_tui.events.row_describe import row_line

from .conftest import oracle_db, requires_zymi, zymi_bin

EDITS = {
    "a number as text": ("llm_call_started", '"iteration":1,', '"iteration":"1",'),
    "a boolean as 1": ("workflow_node_completed", '"success":true', '"success":1'),
    "an integer as 2.0": ("llm_call_started", '"message_count":2,', '"message_count":2.0,'),
}


@requires_zymi
@pytest.mark.parametrize("edit", list(EDITS))
def test_a_loosely_typed_field_is_refused_as_zymi_refuses_it(edit: str, tmp_path: Path) -> None:
    tag, old, new = EDITS[edit]
    db = tmp_path / ".zymi" / "events.db"
    db.parent.mkdir()
    shutil.copyfile(oracle_db("memory"), db)
    con = sqlite3.connect(db)
    gid, seq, data = con.execute(
        "SELECT id, sequence, data FROM events WHERE kind_tag = ? AND instr(data, ?) ORDER BY id LIMIT 1", (tag, old)
    ).fetchone()
    bad = data.replace(old, new, 1)
    con.execute("UPDATE events SET data = ? WHERE id = ?", (bad, gid))
    con.commit()
    con.close()

    bin_ = zymi_bin()
    assert bin_
    zymi = subprocess.run([bin_, "events", "-d", str(tmp_path), "--raw", "--limit", "100000"],
                          capture_output=True, text=True, timeout=LIMIT)  # fmt: skip
    assert zymi.returncode != 0 and "invalid type" in zymi.stderr, zymi.stderr

    decode_event(data, seq)  # the row as recorded reads
    with pytest.raises(EventDecodeError, match="Expected"):
        decode_event(bad, seq)
    with pytest.raises(EventDecodeError):
        row_line(bad, seq)
    with pytest.raises(EventDecodeError):
        decode_replay_row(KIND_BY_TAG[tag].TYPE, gid, seq, bad)
