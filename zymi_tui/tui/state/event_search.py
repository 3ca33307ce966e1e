"""What the events search finds: a needle in an event's line, its kind's name or its stored JSON; over
decoded events (the list's own search) or rows as stored (a long run's pages, read by a worker)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zymi_tui.events.store import RawRow
from zymi_tui.events.stored import BadRow, StoredEvent

if TYPE_CHECKING:
    from zymi_tui.events.describe import Line


def matches(se: StoredEvent, needle: str, line: Line | None = None) -> bool:
    """What the events search finds: `needle` (lower case) in the line shown, the kind's name or the raw JSON."""
    if needle in se.data.lower():
        return True
    if line is None:
        from zymi_tui.events.describe import describe  # loaded with the first event decoded (see line_of)

        line = describe(se.event)
    return needle in searched_text(line, se.event.type_name)


def searched_text(line: Line, type_name: str) -> str:
    """What of an event's line the search looks in (besides its stored JSON), lower case."""
    return f"{line.label} {line.detail} {type_name}".lower()


def search_rows(rows: list[RawRow], needle: str) -> tuple[list[int], list[BadRow]]:
    """`matches` over rows as stored (a long run's pages): the ids found, and the rows that cannot be read.
    A row is described from a partial decode (`row_describe`: the same line, refused in the same words); a
    row that cannot be read is never a hit, even when its text holds `needle`: it is not an event the list
    shows, and is reported (the banner's unreadable rows) instead."""
    from zymi_tui.events.envelope import EventDecodeError
    from zymi_tui.events.row_describe import row_line

    found: list[int] = []
    bad: list[BadRow] = []
    for gid, stream_id, seq, data in rows:
        try:
            type_name, line = row_line(data, seq)
        except EventDecodeError as e:
            bad.append(BadRow(gid, stream_id, seq, str(e)))
            continue
        if needle in data.lower() or needle in searched_text(line, type_name):
            found.append(gid)
    return found, bad
