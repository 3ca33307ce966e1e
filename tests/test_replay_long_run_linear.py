"""A whole-store replay of one long run without a project grows linearly with the run.

Each run of the step infers its Layer A by building the tail without, then with, the run's fresh
cutoff. The builder used to recompute the whole history's tail at each switch (quadratic in the
run: 62 s of CPU for one 100,000-event run); it now keeps the uncut tail up to date while a cutoff is
set. Counted, not timed: the items appended to tails over a replay of 2N turns are about twice those
of N turns (4x when quadratic). The rows themselves are the replay's own (checked against the oracle
by test_context_conformance); here the two sizes also agree on the rows they share.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from benchmarks.make_long_run import write_clones
from zymi_tui.commands.context_cmds import row_json
from zymi_tui.context import layer_c
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import location_of
from zymi_tui.replay.store_replay import replay_store


def _replay(db: Path) -> list[str]:
    async def go() -> list[str]:
        reader = await open_reader(location_of(db))
        try:
            return [json.dumps(row_json(r, messages=False)) async for r in replay_store(reader, project=None)]
        finally:
            await reader.close()

    return asyncio.run(go())


def test_tail_work_grows_linearly_with_a_long_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    appended = [0]
    real = layer_c.Tail.append

    def counted(self: layer_c.Tail, raw: layer_c.Item) -> None:
        appended[0] += 1
        real(self, raw)

    monkeypatch.setattr(layer_c.Tail, "append", counted)
    work: list[int] = []
    rows: list[list[str]] = []
    for events in (4_000, 8_000):
        db = tmp_path / f"long_{events}.db"
        write_clones(db, events, "coding_default")
        appended[0] = 0
        rows.append(_replay(db))
        work.append(appended[0])
    assert len(rows[1]) > 1.8 * len(rows[0])
    assert rows[1][: len(rows[0]) - 1] == rows[0][:-1]  # the same calls, the same figures (totals apart)
    assert work[1] < 2.5 * work[0], f"tail appends {work}: more than linear in the run's length"
