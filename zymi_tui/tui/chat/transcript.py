"""What the chat screen shows, built from the store's events only (live or when a chat is resumed).

One chat is one run stream `S` plus its step streams `S:step:<id>`; every event of a turn carries
the turn's correlation id (a compaction has its own, so it joins the turn that is running).
Pure: no widgets, no IO.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zymi_tui.events import kinds as k
from zymi_tui.events.describe import saved_words
from zymi_tui.events.messages import message_text
from zymi_tui.events.store import STEP_MARK, run_of
from zymi_tui.events.stored import StoredEvent

SHOWN_MESSAGE_BYTES = 2000  # a longer message is recorded whole and shown cut


@dataclass
class ToolLine:
    call_id: str
    name: str
    arguments: str
    result_preview: str | None = None
    is_error: bool = False
    duration_ms: int | None = None


@dataclass
class Turn:
    correlation_id: str
    user: str
    tools: list[ToolLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # approvals, failed calls (folded with the tool calls)
    compactions: list[tuple[str, bool]] = field(default_factory=list)  # (what happened, the summary grew): shown
    answer: str | None = None
    status: str = "running"  # running | done | failed | cancelled
    error: str | None = None
    llm_calls: int = 0
    model: str | None = None


def shown_text(text: str, limit: int = SHOWN_MESSAGE_BYTES) -> str:
    """`text`, or its first `limit` bytes and a note of the full size."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    head = raw[:limit].decode("utf-8", errors="ignore")
    return f"{head}… ({len(raw):,} bytes, shown cut; recorded whole)"


class Transcript:
    """The turns of one chat stream, fed its events (and its step streams') in store order."""

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self.turns: list[Turn] = []
        self._by_corr: dict[str, Turn] = {}
        self._tools: dict[str, ToolLine] = {}

    def belongs(self, se: StoredEvent) -> bool:
        return run_of(se.event.stream_id) == self.stream

    def _turn(self, corr: str | None) -> Turn | None:
        if corr is not None and corr in self._by_corr:
            return self._by_corr[corr]
        return self.turns[-1] if self.turns else None

    def add(self, se: StoredEvent) -> Turn | None:
        """Feed one event; returns the turn it changed (None: not of this chat, or nothing shown)."""
        ev = se.event
        if not self.belongs(se):
            return None
        d = ev.kind
        on_step = STEP_MARK in ev.stream_id
        if isinstance(d, k.UserMessageReceived) and not on_step:
            new = Turn(ev.correlation_id or "", message_text(d.content))
            self.turns.append(new)
            if ev.correlation_id:
                self._by_corr[ev.correlation_id] = new
            return new
        turn = self._turn(ev.correlation_id)
        if turn is None:
            return None
        if isinstance(d, k.ResponseReady):
            turn.answer = d.content
        elif isinstance(d, k.PipelineCompleted):
            if d.success:
                turn.status = "done"
                if turn.answer is None:
                    turn.answer = d.final_output
            else:
                turn.status = "cancelled" if (d.error or "").startswith(CANCELLED) else "failed"
                turn.error = d.error or (d.final_output or "the pipeline failed")
        elif isinstance(d, k.LlmCallStarted):
            if d.iteration > 0:
                turn.llm_calls += 1
        elif isinstance(d, k.LlmCallCompleted):
            extra = d.engine_notes
            if isinstance(extra, dict) and extra.get("model"):
                turn.model = f"{extra.get('provider')}/{extra['model']}"
        elif isinstance(d, k.LlmCallFailed):
            turn.notes.append(f"LLM call {d.iteration} failed after {d.elapsed_ms} ms: {d.error}")
        elif isinstance(d, k.ToolCallRequested):
            line = ToolLine(d.call_id, d.tool_name, d.arguments)
            self._tools[d.call_id] = line
            turn.tools.append(line)
        elif isinstance(d, k.ToolCallCompleted):
            done = self._tools.get(d.call_id)
            if done is None:
                return None
            done.result_preview, done.is_error, done.duration_ms = d.result_preview, d.is_error, d.duration_ms
        elif isinstance(d, k.ContextCompacted):
            lo, hi = d.replaces_seq_range
            turn.compactions.append(
                (f"context compacted: seq {lo}..{hi} replaced by a summary · {saved_words(d.bytes_saved)}",
                 d.bytes_saved < 0)
            )  # fmt: skip
        elif isinstance(d, k.ApprovalRequested):
            turn.notes.append(f"approval requested: {d.description}")
        elif isinstance(d, k.ApprovalGranted):
            turn.notes.append(f"approved by {d.decided_by}")
        elif isinstance(d, k.ApprovalDenied):
            turn.notes.append(f"denied by {d.decided_by}" + (f": {d.reason}" if d.reason else ""))
        else:
            return None
        return turn


CANCELLED = "cancelled by the user"
