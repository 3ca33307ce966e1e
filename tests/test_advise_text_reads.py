"""`advise`'s detectors read no dropped text back from the store: a replay's builders drop old items' texts
(context/texts.py) and the large-tool-result detector only needs each item's kind and size, which stay.

The answer keys are not the detector's: the store's own reads (`SqliteReader.rows_at`, counted while the
watch closes its streams), and the same advice from builders that keep every text (nothing dropped)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.make_long_run import write_clones
from tests.conftest import ORACLE
from zymi_tui.context import builder as builder_module
from zymi_tui.context import layer_c
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.replay.advice import advise, to_json
from zymi_tui.replay.advice import watch as watch_module

PROJECT = ORACLE / "coding_default" / "project"


def _advice(db: Path, monkeypatch: pytest.MonkeyPatch, *, drop: bool) -> tuple[dict[str, Any], int]:
    """(advise's JSON, sequences read back from the store while the watch closed its streams)."""
    monkeypatch.setattr(builder_module, "HOT_ITEMS", 2 if drop else 10**9)
    monkeypatch.setattr(layer_c, "DROP_MIN_BYTES", 0 if drop else 64)
    # every tool result counts as large: the detector looks at every item of every tail
    monkeypatch.setattr(watch_module, "LARGE_RESULT_SHARE", 1e-9)
    read, closing = [0], [False]
    rows_at, close = SqliteReader.rows_at, watch_module.Watch._close

    def counted(self: SqliteReader, stream_id: str, sequences: Any) -> Any:
        seqs = list(sequences)
        read[0] += len(seqs) if closing[0] else 0
        return rows_at(self, stream_id, seqs)

    def watched_close(self: watch_module.Watch, st: watch_module.OpenStream) -> None:
        closing[0] = True
        try:
            close(self, st)
        finally:
            closing[0] = False

    monkeypatch.setattr(SqliteReader, "rows_at", counted)
    monkeypatch.setattr(watch_module.Watch, "_close", watched_close)

    async def run() -> dict[str, Any]:
        async with await SqliteReader.open(db) as reader:
            return to_json(await advise(reader, PROJECT))

    return json.loads(json.dumps(asyncio.run(run()))), read[0]


def test_the_detectors_read_no_dropped_text_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "long.db"
    write_clones(db, 3_000, "coding_default")
    kept, _ = _advice(db, monkeypatch, drop=False)
    dropped, read_back = _advice(db, monkeypatch, drop=True)
    assert "large_tool_result" in [f["signal"] for f in kept["findings"]]
    assert dropped == kept
    assert read_back == 0, f"{read_back} texts read back from the store while the streams were closed"
