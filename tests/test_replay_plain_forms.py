"""A replay decodes a chunk of rows with their ids and timestamps as plain text and checks them together
(`plain_forms`), falling back to the envelope's patterns on any doubt. Every row must read, and every
refused row be worded, exactly as the strict per-row decoder (`decode_replay_row`) reads or words it: a
hostile list of ids and timestamps, each planted in a chunk of real rows (first, middle, last, second
chunk), compared with the strict decoder row by row; and the batch tests against the patterns."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

import pytest

from zymi_tui.events.envelope import EventDecodeError
from zymi_tui.events.patterns import TIMESTAMP_PATTERN, UUID_PATTERN
from zymi_tui.events.plain_forms import plain_timestamps, plain_uuids
from zymi_tui.events.replay_view import CHUNK, TYPE_BY_TAG, decode_replay_row, replay_rows

from .conftest import oracle_db

U = "0f1f701b-1f8a-4d71-8d69-9254d9133798"
HOSTILE_IDS = [
    U.upper(), "0F1f701b-1f8a-4D71-8d69-9254d9133798", "{" + U + "}", "urn:uuid:" + U, U.replace("-", ""),
    U + "\n", "\n" + U, U + " ", U[:-1], U + "0", U.replace("-", "_"), U.replace("0", "٣"), U.replace("f", "ｆ"),
    U.replace("1", "g"), U[:8] + U[9:13] + "-" + U[8:9] + U[13:], "", "-" * 36, U.replace("-", "") + "----",
    "urn:uuid:{" + U + "}", U + "\n" + U, "\ud800" + U[1:],
]  # fmt: skip
T = "2026-12-02T16:44:14.786111417Z"
HOSTILE_TIMES = [
    "2026-12-02T16:44:14Z", *(f"2026-12-02T16:44:14.{'123456789'[:n]}Z" for n in range(1, 10)),
    "2026-12-02T16:44:14.1234567890Z", "2026-12-02T16:44:14.Z", "2026-12-31T23:59:60.000000000Z",
    "2026-12-31T23:59:60Z", "2026-12-02T16:44:14.786111417+00:00", "2026-12-02T16:44:14.786111417-05:30",
    "2026-12-02T16:44:14.786111417+24:00", "2026-12-02t16:44:14.786111417z", "2026-12-02 16:44:14.786111417Z",
    T + "\n", T.replace("6", "٣"), T.replace("2", "２"), "2026-13-02T16:44:14.786111417Z",
    "2026-02-30T16:44:14.786111417Z", "2026-12-02T24:00:00.000000000Z", "2026-12-02T16:60:14.786111417Z",
    "0000-12-02T16:44:14.786111417Z", "2026-12-02T16:44:14,786111417Z", T[:-1], "2026-12-02T16:44:1.7861114170Z",
    "20261-2-02T16:44:14.786111417Z", "2026-12-02T16:44:14.78611141\ud800Z",
]  # fmt: skip
FIELDS = ("id", "timestamp", "correlation_id", "causation_id")


def _rows() -> list[tuple[int, str, int, str, str]]:
    """The replay rows of the recorded stores, one after another (renumbered), more than a chunk of them."""
    rows = []
    for name in ("coding_default", "coding_compaction", "memory", "chat_profile", "hard_cap", "fresh_mode"):
        con = sqlite3.connect(f"file:{oracle_db(name)}?mode=ro", uri=True)
        rows += con.execute("SELECT id, stream_id, sequence, kind_tag, data FROM events ORDER BY id").fetchall()
        con.close()
    return [(i, *r[1:]) for i, r in enumerate((r for r in rows if r[3] in TYPE_BY_TAG), 1)][: CHUNK + 40]


def _strict(rows: list[tuple[int, str, int, str, str]]) -> tuple[list[Any], list[tuple[int, str]]]:
    events, bad = [], []
    for gid, _, seq, tag, data in rows:
        try:
            events.append(decode_replay_row(TYPE_BY_TAG[tag], gid, seq, data))
        except EventDecodeError as e:
            bad.append((gid, str(e)))
    return events, bad


def _fast(rows: list[tuple[int, str, int, str, str]]) -> tuple[list[Any], list[tuple[int, str]]]:
    bad: list[tuple[int, str]] = []
    return list(replay_rows(rows, lambda gid, s, q, why: bad.append((gid, why)))), bad


def _planted(rows: list[tuple[int, str, int, str, str]], at: int, field: str, value: str) -> list[Any]:
    gid, stream_id, seq, tag, data = rows[at]
    obj = json.loads(data)
    obj[field] = value
    out = list(rows)
    out[at] = (gid, stream_id, seq, tag, json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    return out


ROWS = _rows()


def test_the_real_rows_read_the_same_and_fill_more_than_a_chunk() -> None:
    assert len(ROWS) > CHUNK
    fast, bad = _fast(ROWS)
    assert (fast, bad) == _strict(ROWS)
    assert len(fast) == len(ROWS) and not bad


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("at", [0, 1, CHUNK - 1, CHUNK, len(ROWS) - 1])
def test_a_hostile_value_reads_or_is_refused_as_the_strict_decoder_does(field: str, at: int) -> None:
    values = HOSTILE_TIMES if field == "timestamp" else HOSTILE_IDS
    for value in values:
        rows = _planted(ROWS, at, field, value)
        assert _fast(rows) == _strict(rows), (field, at, value)


@pytest.mark.parametrize("value", [*HOSTILE_IDS, U, U.upper()])
def test_an_id_the_batch_test_accepts_the_pattern_accepts(value: str) -> None:
    if plain_uuids([U, value, U]):
        assert re.search(UUID_PATTERN, value), value
        assert re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", value), value


@pytest.mark.parametrize("value", [*HOSTILE_TIMES, T])
def test_a_timestamp_the_batch_test_accepts_the_pattern_accepts(value: str) -> None:
    if plain_timestamps([value, value]) or plain_timestamps([T, value]):
        assert re.search(TIMESTAMP_PATTERN, value), value
        assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{1,9}Z", value), value


def test_the_batch_tests_accept_the_forms_zymi_writes() -> None:
    assert plain_uuids([U, U.upper(), "00000000-0000-0000-0000-000000000000"])
    assert plain_timestamps([T, "1970-01-01T00:00:00.000000000Z"])
    assert all(plain_timestamps([f"2026-12-02T16:44:14.{'123456789'[:n]}Z"] * 3) for n in range(1, 10))
    assert not plain_uuids([U, U + "\n"]) and not plain_timestamps([T, T[:-3] + "1Zz"])


SHORT = "2026-12-02T16:44:14.786111Z"  # zymi leaves a fraction's trailing zeros out: a value shorter than the rest


def test_timestamps_of_two_lengths_are_checked_a_length_at_a_time() -> None:
    assert plain_timestamps([T, SHORT, T]) and plain_timestamps([SHORT, T, T[:-3] + "1Z", SHORT])
    for value in HOSTILE_TIMES:  # a value the patterns refuse, among plain ones of two lengths: refused
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{1,9}Z", value):
            assert not plain_timestamps([T, SHORT, value, T]), value


def test_a_chunk_holding_a_shorter_timestamp_is_checked_once_not_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import zymi_tui.events.replay_view as replay_view

    checked: list[int] = []

    def counted(values: list[str]) -> bool:
        checked.append(len(values))
        return plain_timestamps(values)

    monkeypatch.setattr(replay_view, "plain_timestamps", counted)
    rows = _planted(ROWS, 5, "timestamp", SHORT)
    assert _fast(rows) == _strict(rows)
    assert checked == [CHUNK, len(ROWS) - CHUNK]  # one check a chunk (main: one more for each row of the first)
