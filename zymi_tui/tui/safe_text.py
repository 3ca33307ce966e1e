"""Text from a store, a project, a model or a tool, made safe to show in a widget.

Such text is never parsed as Rich markup (`[/x]`, `[[a]]`, `[link=…]` stay as typed), every
character that could act on the terminal (ESC, NUL, C1 controls, bidi overrides, undecodable bytes)
is shown as a visible escape (`zymi_tui.text_safety`), and a cut to a width is made by terminal
cells, between grapheme clusters (an emoji sequence, a letter and its combining marks stay whole).
Every widget that shows such text goes through `safe_text` (a `rich.text.Text`) or `clean` (a str
for Line-API segments and other places that take plain text, never markup).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from zymi_tui.text_safety import escape_controls

ELLIPSIS = "…"
ZWJ = "\u200d"


def _extends(ch: str) -> bool:
    """True when `ch` belongs to the grapheme cluster before it (marks, joiners, selectors, modifiers)."""
    code = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or ch == ZWJ
        or 0xFE00 <= code <= 0xFE0F  # variation selectors
        or 0xE0100 <= code <= 0xE01EF
        or 0x1F3FB <= code <= 0x1F3FF  # skin tone modifiers
        or 0xE0020 <= code <= 0xE007F  # emoji tag sequences (flags of regions)
    )


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def graphemes(text: str) -> Iterator[str]:
    """User-perceived characters: a base with its combining marks, ZWJ emoji sequences, flag pairs."""
    cluster = ""
    for ch in text:
        joined = cluster.endswith(ZWJ)
        pair = _regional(ch) and len(cluster) == 1 and _regional(cluster)
        if cluster and (_extends(ch) or joined or pair):
            cluster += ch
            continue
        if cluster:
            yield cluster
        cluster = ch
    if cluster:
        yield cluster


def cut_cells(text: str, max_cells: int) -> str:
    """`text` in at most `max_cells` terminal cells, cut between graphemes, with `…` when cut."""
    if cell_len(text) <= max_cells:
        return text
    if max_cells <= 0:
        return ""
    out: list[str] = []
    used = 0
    for g in graphemes(text):
        width = cell_len(g)
        if used + width > max_cells - 1:
            break
        out.append(g)
        used += width
    return "".join(out) + ELLIPSIS


def cut_middle(text: str, max_cells: int) -> str:
    """`text` in at most `max_cells` terminal cells: its start, `…`, its end (both ends of a long id tell it
    apart), cut between graphemes."""
    if cell_len(text) <= max_cells:
        return text
    head = cut_cells(text, (max_cells + 1) // 2)
    room, used, tail = max_cells - cell_len(head), 0, []
    for g in reversed(list(graphemes(text))):
        if used + cell_len(g) > room:
            break
        tail.append(g)
        used += cell_len(g)
    return head + "".join(reversed(tail))


def clean(text: object, *, one_line: bool = False, max_cells: int | None = None) -> str:
    """Any value as display text: controls escaped, on one line (whitespace runs folded) if asked, cut to fit."""
    s = "" if text is None else str(text)
    if one_line:
        s = " ".join(s.split())
        s = escape_controls(s)
    else:
        s = escape_controls(s, keep="\n\t")
    return s if max_cells is None else cut_cells(s, max_cells)


def safe_text(text: object, style: str | Style = "", *, one_line: bool = False, max_cells: int | None = None) -> Text:
    """A `rich.text.Text` of store/project/model/tool text: literal (never markup), terminal-safe, cut by cells."""
    return Text(clean(text, one_line=one_line, max_cells=max_cells), style=style)


def wrap_cells(text: str, width: int, indent: str = "") -> list[str]:
    """One display line `text` (already clean) cut into lines of at most `width` cells, between graphemes;
    every line after the first starts with `indent`."""
    width = max(width, len(indent) + 1)
    if text.isascii():  # printable ASCII (clean text): one character is one cell
        out = []
        while len(text) > width:
            out.append(text[:width])
            text = indent + text[width:]
        return [*out, text]
    lines: list[str] = []
    line, used = "", 0
    for g in graphemes(text):
        w = cell_len(g)
        if used + w > width and line.strip():
            lines.append(line)
            line, used = indent, len(indent)
        line += g
        used += w
    return [*lines, line]
