"""An event expanded in the events list: its full payload as `key: value` rows (a compaction's with the
events it replaced), wrapped to the panel's width; and the clock time a row shows."""

from __future__ import annotations

from datetime import datetime

from zymi_tui.events.store import IndexRow
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui.safe_text import clean, wrap_cells


def clock(se: StoredEvent) -> str:
    return datetime.fromtimestamp(se.event.timestamp_ns / 1e9).strftime("%H:%M:%S")


def detail_rows(se: StoredEvent, replaced: list[tuple[IndexRow, StoredEvent | None]]) -> list[tuple[str, str]]:
    """The full payload, plus for a compaction the list of events it replaced (those not read yet by kind)."""
    from zymi_tui.events import kinds as k  # loaded by the event itself (see EventsModel.line_of)
    from zymi_tui.events.describe import describe, full_detail

    rows = [("global id", str(se.global_id)), *full_detail(se.event)]
    d = se.event.kind
    if isinstance(d, k.ContextCompacted):
        lo, hi = d.replaces_seq_range
        rows.append(("replaced", f"{len(replaced)} event(s), seq {lo}..={hi} (press g to jump to them)"))
        for (_, _, seq, tag), e in replaced:
            if e is None:
                rows.append((f"  #{seq}", f"{tag} (reading…)"))
            else:
                line = describe(e.event)
                rows.append((f"  #{seq}", f"{line.label}: {line.detail}"))
    return rows


def wrap_detail(rows: list[tuple[str, str]], width: int) -> list[str]:
    """`key: value` lines, display-safe, values wrapped at `width` terminal cells (never mid-grapheme)."""
    out: list[str] = []
    for key, value in rows:
        first = True
        for para in value.split("\n") or [""]:
            text = clean(f"{key}: {para}" if first else f"  {para}").expandtabs(4)
            first = False
            out += wrap_cells(text, width, "  ")
    return out
