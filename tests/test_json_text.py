"""The shared encoders of events/json_text.py write what `json.dumps` writes (the exports' and
`replay --json`'s byte-identity rests on it): values drawn by hypothesis and a hostile list."""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zymi_tui.events.json_text import compact_json_text, json_text, quoted_utf8

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


def test_quoted_utf8_is_encode_basestring_in_utf8_for_every_code_point() -> None:
    """Each code point but the surrogates, alone and between ASCII letters, then all of them in one text."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for c in points:
        assert quoted_utf8(c) == encode_basestring(c).encode(), hex(ord(c))
        assert quoted_utf8(f"a{c}b") == encode_basestring(f"a{c}b").encode(), hex(ord(c))
    whole = "".join(points)
    assert quoted_utf8(whole) == json.dumps(whole, ensure_ascii=False).encode()


@given(st.text())
def test_quoted_utf8_of_any_text(text: str) -> None:
    assert quoted_utf8(text) == json.dumps(text, ensure_ascii=False).encode()


def test_quoted_utf8_refuses_a_lone_surrogate_as_encoding_the_text_does() -> None:
    for text in ("\ud800", "a\udcff b", "x" * 5000 + "\udfff"):
        with pytest.raises(UnicodeEncodeError):
            encode_basestring(text).encode()
        with pytest.raises(UnicodeEncodeError):
            quoted_utf8(text)
