"""Observation rent: what each tool result cost while it stayed unmasked (its bytes times the calls
it was resent in full), and what another observation_window would have saved."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from zymi_tui.context.rendered import ContextEntry
from zymi_tui.events.messages import AssistantMessage, ToolResultMessage
from zymi_tui.replay.call_context import CallContext

Replay = Callable[[dict[str, int | None] | None], AsyncIterator[CallContext]]


@dataclass
class Observation:
    """One tool result of a stream and what it cost across the agent calls that carried it."""

    source_seq: int
    tool: str
    call_id: str
    bytes_full: int = 0
    calls_full: int = 0
    calls_masked: int = 0
    rent_bytes: int = 0  # bytes x calls it was sent in full (recorded knobs)
    rent_bytes_what_if: int | None = None  # the same under the what-if window

    @property
    def saved_bytes(self) -> int | None:
        return None if self.rent_bytes_what_if is None else self.rent_bytes - self.rent_bytes_what_if


@dataclass
class Rent:
    stream_id: str
    observations: list[Observation] = field(default_factory=list)
    calls: int = 0
    chars_total: int = 0
    chars_total_what_if: int | None = None
    what_if_window: int | None = None

    def ranked(self) -> list[Observation]:
        return sorted(self.observations, key=lambda o: (-o.rent_bytes, o.source_seq))


def is_masked(entry: ContextEntry) -> bool:
    reason: str = entry.reason
    return reason.startswith("masked")


def _tool_names(entries: list[ContextEntry]) -> dict[str, str]:
    names: dict[str, str] = {}
    for e in entries:
        if isinstance(e.message, AssistantMessage):
            for c in e.message.tool_calls:
                names[c.id] = c.name
    return names


def _walk(call: CallContext, into: dict[int, Observation], *, what_if: bool) -> int:
    """One call's tool results added to `into`; returns the chars it sent (0: not sent)."""
    r = call.rendered
    if r is None or call.is_compaction or call.hard_cap_failure or r.hard_cap_exceeded:
        return 0
    entries = list(r.entries)
    names = _tool_names(entries)
    for e in entries:
        if not isinstance(e.message, ToolResultMessage) or e.source_seq is None:
            continue
        obs = into.setdefault(
            e.source_seq,
            Observation(e.source_seq, names.get(e.message.tool_call_id, "unknown"), e.message.tool_call_id),
        )
        if is_masked(e):
            if not what_if:
                obs.calls_masked += 1
            continue
        if what_if:
            obs.rent_bytes_what_if = (obs.rent_bytes_what_if or 0) + e.bytes
        else:
            obs.bytes_full = max(obs.bytes_full, e.bytes)
            obs.calls_full += 1
            obs.rent_bytes += e.bytes
    return r.chars


async def observation_rent(
    replay: Replay, stream_id: str, *, window: int | None = None, base: dict[str, int | None] | None = None
) -> Rent:
    """Rank the tool results of `stream_id` by rent under the recorded knobs; with `window`, also
    replay under `base` with that observation_window and report what each would have saved. Each
    call is counted as the replay makes it and not kept (a long run's calls are not held)."""
    observations: dict[int, Observation] = {}
    rent = Rent(stream_id)
    async for c in replay(None):
        if c.stream_id == stream_id:
            chars = _walk(c, observations, what_if=False)
            rent.calls += (
                c.rendered is not None
                and not c.is_compaction
                and not c.hard_cap_failure
                and (not c.rendered.hard_cap_exceeded)
            )  # the agent calls sent, as `replay`, `compare` and `advise` count them
            rent.chars_total += chars
    if window is not None and base is not None:
        knobs = {**base, "observation_window": window}
        for obs in observations.values():
            obs.rent_bytes_what_if = 0
        rent.chars_total_what_if = 0
        async for c in replay(knobs):
            if c.stream_id == stream_id:
                rent.chars_total_what_if += _walk(c, observations, what_if=True)
        rent.what_if_window = window
    rent.observations = list(observations.values())
    return rent
