"""Store text made safe to show on a terminal: every character that could act on it, escaped visibly.

Event data comes from tool output, models and other processes. Printed as is, an ESC starts a
terminal control sequence (`ESC [2J` clears the screen), a NUL or a C1 control confuses the
terminal, a bidi override (U+202E) makes the text read in another order than it is, and a byte
that was not UTF-8 (kept by the readers as a lone surrogate) cannot be printed at all. Each of
these is replaced by a visible escape (`\\x1b`, `\\u202e`, `\\xff` for an undecodable byte); all
other text, emoji sequences included, is left alone.

This module imports nothing from the package, so the CLI and the TUI widgets can both use it.
"""

from __future__ import annotations

import unicodedata

# Cf characters that reorder text (bidi embeddings, overrides, isolates and marks)
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_UNSAFE_CATEGORIES = frozenset(("Cc", "Cs", "Zl", "Zp"))


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as `surrogateescape` keeps it
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def is_unsafe_char(ch: str) -> bool:
    """True for a control character, a lone surrogate, a line/paragraph separator or a bidi control."""
    return ch in BIDI_CONTROLS or unicodedata.category(ch) in _UNSAFE_CATEGORIES


def escape_controls(text: str, *, keep: str = "") -> str:
    """`text` with every unsafe character (see `is_unsafe_char`) written as a visible escape.

    `keep` lists characters to leave as they are (e.g. "\\n" for text shown on several lines).
    A backslash is not itself escaped: the result is for reading, not for parsing back.
    """
    if text.isprintable():
        return text
    return "".join(_escape_char(ch) if ch not in keep and is_unsafe_char(ch) else ch for ch in text)


def has_undecodable_bytes(text: str) -> bool:
    """True when `text` holds a lone surrogate: bytes that were not valid UTF-8 where it was read."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
