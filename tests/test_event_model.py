"""The event model against every row the real engine recorded."""

from __future__ import annotations

import sqlite3

import pytest

from zymi_tui.events.envelope import EventDecodeError, decode_event
from zymi_tui.events.kinds import KNOWN_KINDS, UnknownKind

from .conftest import SCENARIOS, oracle_db


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_oracle_row_reserialises_byte_for_byte(scenario: str) -> None:
    con = sqlite3.connect(f"file:{oracle_db(scenario)}?mode=ro", uri=True)
    rows = con.execute("SELECT data, sequence, kind_tag, timestamp FROM events").fetchall()
    assert rows
    for data, seq, tag, column_ts in rows:
        event = decode_event(data, seq)
        assert not isinstance(event.kind, UnknownKind)
        assert event.to_json() == data
        assert event.tag == tag
        assert event.sequence == seq
        assert event.column_timestamp() == column_ts


def test_thirty_five_kinds_known() -> None:
    # events/mod.rs 0.9.3 declares 35 variants
    assert len(KNOWN_KINDS) == 35


def test_unknown_kind_is_kept_not_fatal() -> None:
    data = (
        '{"id":"0210708e-ab3f-4c59-9186-f3c3dc8fd3e1","stream_id":"s","sequence":0,'
        '"timestamp":"2026-12-02T15:43:49.973320723Z","kind":{"type":"FutureThing","data":{"x":[1,2]}},'
        '"correlation_id":null,"causation_id":null,"source":"engine"}'
    )
    event = decode_event(data, 7)
    assert isinstance(event.kind, UnknownKind)
    assert event.kind.type_name == "FutureThing"
    assert event.to_json() == data


@pytest.mark.parametrize(
    "data",
    [
        "not json",
        '{"id":"nope","stream_id":"s","sequence":0,"timestamp":"2026-12-02T15:43:49Z",'
        '"kind":{"type":"WorkflowCompleted","data":{"success":true}},"correlation_id":null,'
        '"causation_id":null,"source":"e"}',
        '{"id":"0210708e-ab3f-4c59-9186-f3c3dc8fd3e1","stream_id":"s","sequence":0,'
        '"timestamp":"2026-12-02T15:43:49Z","kind":{"type":"WorkflowCompleted","data":{}},'
        '"correlation_id":null,"causation_id":null,"source":"e"}',
    ],
)
def test_malformed_rows_raise_decode_error(data: str) -> None:
    with pytest.raises(EventDecodeError):
        decode_event(data, 1)


_ROW = (
    '{"id":"0210708e-ab3f-4c59-9186-f3c3dc8fd3e1","stream_id":"s","sequence":0,'
    '"timestamp":"2026-12-02T15:43:49.973320723Z","kind":{"type":"KIND","data":{"source":"TEXT"}},'
    '"correlation_id":null,"causation_id":null,"source":"engine"}'
)


@pytest.mark.parametrize("kind", ["FutureThing", "ScheduledTaskTriggered"])
def test_a_lone_surrogate_escape_is_refused_as_zymi_refuses_it(kind: str) -> None:
    """`\\ud800` alone is JSON syntax but no text (zymi: "unexpected end of hex escape"); a pair is an emoji."""
    fields = '"entry_id":"e","task":"TEXT"' if kind == "ScheduledTaskTriggered" else '"source":"TEXT"'
    row = _ROW.replace('"source":"TEXT"', fields).replace("KIND", kind)
    with pytest.raises(EventDecodeError, match=r"surrogate|escape"):
        decode_event(row.replace("TEXT", "\\ud800 tail"), 1)
    with pytest.raises(EventDecodeError, match=r"surrogate|escape"):
        decode_event(row.replace("TEXT", "head \\uDFFF"), 1)
    paired = decode_event(row.replace("TEXT", "\\ud83d\\ude00"), 1)
    assert "\U0001f600" in paired.to_json()
    literal = decode_event(row.replace("TEXT", "\\\\ud800"), 1)  # an escaped backslash, then "ud800": plain text
    assert "\\\\ud800" in literal.to_json()
