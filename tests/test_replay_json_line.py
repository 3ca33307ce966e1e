"""`replay --json` writes most lines without building their object (`replay_json.row_line`): each such
line must be the line Python's own JSON encoder makes of the row's object (`json.dumps(...,
ensure_ascii=False)`, the oracle here), on every recorded store, under the recorded and what-if
knobs, with and without a project, and for rows whose values are hostile (quotes, controls, non-ASCII,
lone surrogates, a bool or a float where an integer belongs)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from zymi_tui.commands.replay_json import row_json, row_line
from zymi_tui.context.knobs import resolve_knobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import location_of
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_replay import recorded_knobs, replay_store

ORACLE = Path(__file__).parent / "oracle"
STORES = ["chat_profile", "coding_compaction", "coding_default", "fresh_mode", "hard_cap", "memory"]


def _rows(db: Path, project: Path | None, profile: str | None) -> list[CallContext]:
    knobs = None if profile is None else resolve_knobs(recorded_knobs(project), profile, [])

    async def go() -> list[CallContext]:
        reader = await open_reader(location_of(db))
        try:
            return [r async for r in replay_store(reader, project=project, knobs=knobs)]
        finally:
            await reader.close()

    return asyncio.run(go())


def _expected(row: CallContext, tokens: bool) -> str:
    return json.dumps(row_json(row, messages=False, tokens=tokens), ensure_ascii=False)


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("profile", [None, "coding"])
def test_each_line_is_the_encoders(store: str, profile: str | None, tmp_path: Path) -> None:
    bare = tmp_path / "events.db"
    shutil.copy(ORACLE / store / "events.db", bare)
    written = 0
    for db, project in ((ORACLE / store / "events.db", ORACLE / store / "project"), (bare, None)):
        rows = _rows(db, project, profile)
        assert rows
        for row in rows:
            for tokens in (False, True):
                line = row_line(row, tokens=tokens)
                if line is not None:
                    written += 1
                    assert line == _expected(row, tokens)
    assert written  # the fast path is taken


def test_hostile_values_are_written_as_the_encoder_writes_them_or_refused() -> None:
    rows = _rows(ORACLE / "memory" / "events.db", ORACLE / "memory" / "project", None)
    base = next(r for r in rows if r.rendered is not None and not r.is_compaction)
    odd: list[dict[str, object]] = [
        {"stream_id": 'a"b\\c\n\t\x00\x1f\x7f é 😀 \u2028'},
        {"stream_id": "bad \udcff surrogate"},
        {"note": 'quote " and \\ and \r\n'},
        {"note": "ünïcode ✓"},
        {"prefix_basis": "basis\x01"},
        {"prefix_basis": None, "recorded_input_tokens": None, "recorded_cached_tokens": 0},
        {"sequence": True},  # a bool where an integer belongs: the encoder writes true
        {"recorded_chars": 1.5},  # a float: the encoder's repr
        {"recorded_chars": -7, "global_id": 2**70},
        {"prefix_inferred": 1},  # an int where a bool belongs
        {"knobs_source": "x\ty"},
        {"hard_cap_failure": True, "rendered": None},
        {"is_compaction": True},
    ]
    for change in odd:
        row = dataclasses.replace(base, **change)  # type: ignore[arg-type]
        for tokens in (False, True):
            line = row_line(row, tokens=tokens)
            if line is not None:
                assert line == _expected(row, tokens), change


@pytest.mark.parametrize("store", STORES)
def test_rows_with_a_prefix_break_are_written_without_their_object(store: str) -> None:
    """A row whose call breaks the cached prefix of the call before (about half of a store's rows) is
    written by `row_line` too, as the encoder writes its object."""
    rows = _rows(ORACLE / store / "events.db", ORACLE / store / "project", None)
    broken = [r for r in rows if r.reuse is not None and r.reuse.broken is not None]
    if not broken:
        pytest.skip("no call breaks the prefix here")
    for row in broken:
        for tokens in (False, True):
            assert row_line(row, tokens=tokens) == _expected(row, tokens)


def test_hostile_prefix_breaks_are_written_as_the_encoder_writes_them_or_refused() -> None:
    rows = _rows(ORACLE / "memory" / "events.db", ORACLE / "memory" / "project", None)
    base = next(r for r in rows if r.reuse is not None and r.reuse.broken is not None and not r.is_compaction)
    assert base.reuse is not None and base.reuse.broken is not None
    odd: list[dict[str, object]] = [
        {"cause": 'a"b\\c\n\t\x00\x1f\x7f é 😀 \u2028'},
        {"cause": "bad \udcff surrogate"},
        {"layer": "C", "source_seq": 12},
        {"source_seq": 2**70, "index": 0},
        {"source_seq": True},  # a bool where an integer belongs
        {"index": 1.5},
        {"layer": 3},  # an int where a string belongs
        {"cause": None},
    ]
    written = 0
    for change in odd:
        brk = dataclasses.replace(base.reuse.broken, **change)  # type: ignore[arg-type]
        row = dataclasses.replace(base, reuse=dataclasses.replace(base.reuse, broken=brk))
        for tokens in (False, True):
            line = row_line(row, tokens=tokens)
            if line is not None:
                written += 1
                assert line == _expected(row, tokens), change
    assert written
