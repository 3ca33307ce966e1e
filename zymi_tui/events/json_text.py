"""`json.dumps(value, ensure_ascii=False)` with its C encoder made once: the exports and `replay --json`
encode a value per call, span or entry, and `json.dumps` (`JSONEncoder.encode`) makes a new C encoder,
with its Python-level wrappers, for every value. Without the circular-reference check: a value parsed
from JSON or built from one has none."""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

import msgspec


def _encoder(item_separator: str, key_separator: str) -> Callable[[Any], str]:
    settings = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(item_separator, key_separator))
    make: Any = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed
    if make is None:  # an interpreter without the C accelerator
        return settings.encode
    chunks = make(None, settings.default, encode_basestring, None, key_separator, item_separator, False, False, True)

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


json_text = _encoder(", ", ": ")  # json.dumps(value, ensure_ascii=False)
compact_json_text = _encoder(",", ":")  # the same with separators=(",", ":")

# `encode_basestring(text).encode()`, ~5-10 times faster (msgspec escapes `"`, `\\` and the controls
# below U+0020 as `json` does, and writes the rest as UTF-8: tests/test_json_text.py compares every code
# point); a lone surrogate raises UnicodeEncodeError, as encoding `encode_basestring`'s text does
quoted_utf8: Callable[[str], bytes] = msgspec.json.Encoder().encode
