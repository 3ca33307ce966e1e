"""Observation rent: what each tool result cost while it stayed unmasked (its bytes times the calls
it was resent in full), and what another observation_window would have saved.

A long run has a tool result every few events: their figures are kept in columns (machine integers,
the call ids in one byte string), found by their sequence walking each call's entries in order, and
`Observation` objects are made only for the results a caller asks for (`Rent.ranked(top)`)."""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from zymi_tui.context.rendered import ContextEntry
from zymi_tui.events.messages import AssistantMessage, ToolResultMessage
from zymi_tui.replay.call_context import CallContext

Replay = Callable[[dict[str, int | None] | None], AsyncIterator[CallContext]]
NO_WHAT_IF = -1  # a column value: no what-if replayed (`rent_bytes_what_if` None)


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


class Ledger:
    """The observations of one stream in columns, in sequence order (row r: `seqs[r]`, ...)."""

    __slots__ = (
        "_ids", "_ids_end", "_tool_of", "_tools", "bytes_full", "calls_full", "calls_masked", "rent", "rent_what_if",
        "seqs", "tools",
    )  # fmt: skip

    def __init__(self) -> None:
        self.seqs = array("q")
        self.tools = array("l")  # index into `_tools`
        self.bytes_full, self.calls_full, self.calls_masked = array("q"), array("q"), array("q")
        self.rent, self.rent_what_if = array("q"), array("q")
        self._ids = bytearray()  # the call ids, UTF-8, one after another ...
        self._ids_end = array("q")  # ... row r's ending at _ids_end[r] (rows inserted out of order: see `row`)
        self._tools: list[str] = []
        self._tool_of: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.seqs)

    def find(self, seq: int, lo: int) -> int:
        """The row of `seq` at or after row `lo` (its insertion point if it has none): a call's tool
        results come in sequence order, mostly the rows right after the last one found."""
        seqs, n = self.seqs, len(self.seqs)
        if lo < n and seqs[lo] >= seq:
            return lo
        if lo + 1 < n and seqs[lo + 1] >= seq:
            return lo + 1
        return bisect.bisect_left(seqs, seq, lo)

    def insert(self, at: int, seq: int, tool: str, call_id: str) -> None:
        t = self._tool_of.get(tool)
        if t is None:
            t = self._tool_of[tool] = len(self._tools)
            self._tools.append(tool)
        raw = call_id.encode()
        if at == len(self.seqs):
            self._ids += raw
            self._ids_end.append(len(self._ids))
        else:  # (rare: a result first shown after later ones, by a rebuild after a compaction)
            start = self._ids_end[at - 1] if at else 0
            self._ids[start:start] = raw
            self._ids_end.insert(at, start + len(raw))
            for r in range(at + 1, len(self._ids_end)):
                self._ids_end[r] += len(raw)
        for col, value in (
            (self.seqs, seq), (self.tools, t), (self.bytes_full, 0), (self.calls_full, 0), (self.calls_masked, 0),
            (self.rent, 0), (self.rent_what_if, NO_WHAT_IF),
        ):  # fmt: skip
            col.insert(at, value)

    def observation(self, r: int) -> Observation:
        start = self._ids_end[r - 1] if r else 0
        what_if = self.rent_what_if[r]
        return Observation(
            self.seqs[r], self._tools[self.tools[r]], self._ids[start : self._ids_end[r]].decode(),
            self.bytes_full[r], self.calls_full[r], self.calls_masked[r], self.rent[r],
            None if what_if == NO_WHAT_IF else what_if,
        )  # fmt: skip


@dataclass
class Rent:
    stream_id: str
    calls: int = 0
    chars_total: int = 0
    chars_total_what_if: int | None = None
    what_if_window: int | None = None
    ledger: Ledger = field(default_factory=Ledger, repr=False)

    @property
    def observations(self) -> list[Observation]:
        """Every tool result seen, in sequence order (made now: a long run has hundreds of thousands)."""
        return [self.ledger.observation(r) for r in range(len(self.ledger))]

    def ranked(self, top: int | None = None) -> list[Observation]:
        """The tool results by rent, highest first (ties: by sequence); only the first `top` if given."""
        led = self.ledger
        rows = range(len(led))

        def key(r: int) -> tuple[int, int]:
            return -led.rent[r], led.seqs[r]

        order = sorted(rows, key=key)[:top] if top is None or top < 0 else heapq.nsmallest(top, rows, key=key)
        return [led.observation(r) for r in order]


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


def _walk(call: CallContext, led: Ledger, *, what_if: bool) -> int:
    """One call's tool results added to `led`; returns the chars it sent (0: not sent)."""
    r = call.rendered
    if r is None or call.is_compaction or call.hard_cap_failure or r.hard_cap_exceeded:
        return 0
    entries = list(r.entries)
    names = _tool_names(entries)
    row = 0
    for e in entries:
        m, seq = e.message, e.source_seq
        if not isinstance(m, ToolResultMessage) or seq is None:
            continue
        row = led.find(seq, row if row < len(led) and led.seqs[row] < seq else 0)
        if row == len(led) or led.seqs[row] != seq:
            led.insert(row, seq, names.get(m.tool_call_id, "unknown"), m.tool_call_id)
        if is_masked(e):
            if not what_if:
                led.calls_masked[row] += 1
            continue
        if what_if:
            was = led.rent_what_if[row]
            led.rent_what_if[row] = e.bytes if was == NO_WHAT_IF else was + e.bytes
        else:
            led.bytes_full[row] = max(led.bytes_full[row], e.bytes)
            led.calls_full[row] += 1
            led.rent[row] += e.bytes
    return r.chars


async def observation_rent(
    replay: Replay, stream_id: str, *, window: int | None = None, base: dict[str, int | None] | None = None
) -> Rent:
    """Rank the tool results of `stream_id` by rent under the recorded knobs; with `window`, also
    replay under `base` with that observation_window and report what each would have saved. Each
    call is counted as the replay makes it and not kept (a long run's calls are not held)."""
    rent = Rent(stream_id)
    led = rent.ledger
    async for c in replay(None):
        if c.stream_id == stream_id:
            chars = _walk(c, led, what_if=False)
            rent.calls += (
                c.rendered is not None
                and not c.is_compaction
                and not c.hard_cap_failure
                and (not c.rendered.hard_cap_exceeded)
            )  # the agent calls sent, as `replay`, `compare` and `advise` count them
            rent.chars_total += chars
    if window is not None and base is not None:
        knobs = {**base, "observation_window": window}
        for r in range(len(led)):
            led.rent_what_if[r] = 0
        rent.chars_total_what_if = 0
        async for c in replay(knobs):
            if c.stream_id == stream_id:
                rent.chars_total_what_if += _walk(c, led, what_if=True)
        rent.what_if_window = window
    return rent
