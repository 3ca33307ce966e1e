"""A compaction a what-if decides where the recording has none: its summary's size estimated from the
recorded summaries' compression ratio, and the context of the compaction call itself."""

from __future__ import annotations

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.masking import message_bytes
from zymi_tui.context.rendered import COMPACTION_PROMPT, CompactionPlan, ContextEntry, RenderedContext
from zymi_tui.replay.call_context import DEFAULT_SUMMARY_RATIO, MAX_SUMMARY_BYTES


class SummaryEstimate:
    """Simulated summary sizes: the recorded summaries' compression ratio (bytes out / span in)."""

    def __init__(self) -> None:
        self.summary_bytes = 0
        self.span_bytes = 0

    def learn(self, summary: str, bytes_saved: int) -> None:
        n = len(summary.encode())
        self.summary_bytes += n
        self.span_bytes += n + bytes_saved

    def estimate(self, span_bytes: int) -> tuple[int, str]:
        if self.span_bytes > 0:
            ratio = self.summary_bytes / self.span_bytes
            basis = f"ratio {ratio:.1%} of the recorded summaries"
        else:
            ratio, basis = DEFAULT_SUMMARY_RATIO, f"assumed ratio {DEFAULT_SUMMARY_RATIO:.0%} (no recorded summary)"
        return max(1, min(MAX_SUMMARY_BYTES, round(span_bytes * ratio))), basis


def compaction_context(plan: CompactionPlan, knobs: ContextKnobs, *, simulated: bool = False) -> RenderedContext:
    """The compaction call's own request: the fixed prompt and the masked span."""
    system, user = plan.request_messages
    lo, hi = plan.replaces_seq_range
    entries = [
        ContextEntry(system, "A", message_bytes(system), "compaction prompt (fixed)"),
        ContextEntry(user, "C", message_bytes(user), f"masked span of seq {lo}..{hi}, {plan.turns} turn(s)"),
    ]
    chars = sum(e.bytes for e in entries)
    return RenderedContext(
        chars=chars,
        message_count=2,
        compaction=None,
        hard_cap_exceeded=False,
        knobs=knobs,
        layer_bytes={"A": len(COMPACTION_PROMPT.encode()), "B": 0, "C": entries[1].bytes},
        _make_entries=lambda: entries,
    )
