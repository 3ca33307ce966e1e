"""The shared encoders of events/json_text.py write what `json.dumps` writes (the exports' and
`replay --json`'s byte-identity rests on it): values drawn by hypothesis and a hostile list."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from zymi_tui.events.json_text import compact_json_text, json_text

_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text()
VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20)
HOSTILE: list[Any] = [
    "\ud800 lone surrogate", "\x00\x1f\x7f\u2028\u2029", 'quote " back \\ slash', "ünïcödé 🙂", float("inf"),
    -0.0, 1e300, 2**70, {"nested": [{"a": [None, True, 1.5]}]}, [], {}, "",
]  # fmt: skip


@given(VALUES)
def test_json_text_is_json_dumps(value: Any) -> None:
    assert json_text(value) == json.dumps(value, ensure_ascii=False)
    assert compact_json_text(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_hostile_values() -> None:
    for value in HOSTILE:
        assert json_text(value) == json.dumps(value, ensure_ascii=False)
        assert compact_json_text(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_a_cycle_is_not_looked_for_but_a_bad_type_is_refused() -> None:
    try:
        json_text({"x": object()})
    except TypeError as e:
        assert "not JSON serializable" in str(e)
    else:
        raise AssertionError("an object json.dumps refuses was written")
