"""Prompt caching: the prefix each call shares with the previous one, recorded cache usage, and a
cost model per provider family (prompt-caching facts in the price table)."""

from __future__ import annotations

from typing import Any

from zymi_tui.replay.calls import CallContext


def reuse_json(row: CallContext) -> dict[str, Any]:
    """`prefix_reuse_*` of an agent call (null for compaction calls and failed builds)."""
    r = row.reuse
    if r is None or row.is_compaction or row.hard_cap_failure:
        return {"prefix_reuse_messages": None, "prefix_reuse_chars": None, "prefix_break": None}
    brk = None
    if r.broken is not None:
        b = r.broken
        brk = {"index": b.index, "layer": b.layer, "source_seq": b.source_seq, "cause": b.cause}
    return {"prefix_reuse_messages": r.messages, "prefix_reuse_chars": r.chars, "prefix_break": brk}
