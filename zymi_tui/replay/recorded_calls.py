"""What calibrates tokens per byte, from the store's recorded LLM calls alone: each LlmCallStarted a replay
keeps paired with its stream's next LlmCallCompleted or LlmCallFailed (`recorded_call_sums`, a pass over
those kinds; `RecordedCalls`, fed the events of a pass that reads them anyway)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from contextlib import aclosing

from zymi_tui.events.kinds import LlmCallCompleted, LlmCallFailed, LlmCallStarted
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK, EventReader
from zymi_tui.replay.event_pages import replay_events

CALL_KINDS = ("llm_call_started", "llm_call_completed", "llm_call_failed")


async def recorded_call_sums(
    reader: EventReader, streams: Sequence[str] | None, *, whatif: bool
) -> tuple[int, int, int]:
    """The `recorded_sums` of the basis profile's figures, from the store's recorded LLM calls alone:
    a replay pairs each LlmCallStarted it keeps (every one under the recorded knobs; under other knobs
    only the agent calls, as a what-if decides its own compactions) with the stream's next
    LlmCallCompleted or LlmCallFailed, and a call's figure carries its recorded bytes and the usage of
    that completion."""
    calls = RecordedCalls(whatif=whatif)
    async with aclosing(replay_events(reader, streams, CALL_KINDS)) as events:
        async for se in events:
            calls.feed(se)
    return calls.sums


class RecordedCalls:
    """`recorded_call_sums` made from events fed in store order (`feed`: any kinds, the others ignored)."""

    def __init__(self, *, whatif: bool) -> None:
        self.whatif = whatif
        self.pending: dict[str, deque[int]] = {}
        self.sums = (0, 0, 0)

    def feed(self, se: ReplayEvent) -> None:
        kind = se.kind
        if isinstance(kind, LlmCallStarted):
            if STEP_MARK in se.stream_id and (not self.whatif or (kind.iteration != 0 and se.source != "compaction")):
                self.pending.setdefault(se.stream_id, deque()).append(kind.approx_context_chars)
        elif isinstance(kind, LlmCallCompleted | LlmCallFailed):
            waiting = self.pending.get(se.stream_id)  # (none for a stream that is not a step's)
            if not waiting:
                return
            recorded_chars = waiting.popleft()
            if not waiting:
                del self.pending[se.stream_id]
            if isinstance(kind, LlmCallCompleted) and kind.usage is not None and recorded_chars > 0:
                n, chars, tokens = self.sums
                self.sums = (n + 1, chars + recorded_chars, tokens + kind.usage.input_tokens)
