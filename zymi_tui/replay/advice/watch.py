"""What the detectors keep of pass one: its calls watched one at a time, in store order, as the replay
makes them, and none of them held. Store-wide figures are running sums (counts, maxima, the lists a
finding prints); what a detector reads of one step stream (its calls' sizes for the growth fit, its tails,
the tool names its calls carry) is held while the stream is open and boiled down to that stream's few
figures when the pass goes past its last event (`stream_ends`). So memory holds the open streams, not
the store. The tools each stream called (`ToolCallRequested`, which a replay does not decode) are read
by kind, page by page, just ahead of the streams being closed."""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from zymi_tui.context.layer_c import TOOL, Tail
from zymi_tui.context.rendered import ContextEntry, Shape
from zymi_tui.events.kinds import ToolCallRequested
from zymi_tui.events.messages import AssistantMessage, SystemMessage, ToolResultMessage
from zymi_tui.events.store import STEP_MARK, EventReader
from zymi_tui.replay.advice.model import ProjectFacts
from zymi_tui.replay.advice.tool_window import ToolWindow
from zymi_tui.replay.call_context import CallContext

NEAR_MISS = 0.10  # a call within 10% of the hard cap
MIN_CALLS_FOR_GROWTH = 6
CHAT_TURNS = 4  # a stream with this many user turns is a chat
LARGE_RESULT_SHARE = 0.25  # a tool result above this share of the soft cap
POLICY_CAUSES = {
    "masked": "masked by observation_window",
    "forgotten": "forgotten by forget_after_turns",
    "compaction": "a compaction",
}
POLICY_CALLS_SHOWN = 50  # the policy's cache breaks listed in the finding's figures
TOOL_PAGE = 5000


def step_of_stream(stream: str) -> str:
    return stream.split(STEP_MARK, 1)[1] if STEP_MARK in stream else stream


def cause_kind(c: CallContext) -> str:
    """What broke the call's prefix: one of POLICY_CAUSES, or another word (task, memory, none)."""
    b = c.reuse.broken if c.reuse else None
    if b is None:
        return "none"
    return b.cause.split(" ", 1)[0]


def is_sent(c: CallContext) -> bool:
    """An agent call sent under the current knobs (counted in the replay's `agent_calls`)."""
    r = c.rendered
    return not c.is_compaction and not c.hard_cap_failure and r is not None and not r.hard_cap_exceeded


def linear_fit(ys: Sequence[int]) -> tuple[float, float]:
    """R² and slope of ys against their index."""
    n = len(ys)
    mx = (n - 1) / 2
    my = sum(ys) / n
    sxx = sum((i - mx) ** 2 for i in range(n))
    sxy = sum((i - mx) * (y - my) for i, y in enumerate(ys))
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return 0.0, 0.0
    slope = sxy / sxx
    return (sxy * sxy) / (sxx * syy), slope


@dataclass(frozen=True)
class Growth:
    """A stream whose context grows linearly with nothing masked, forgotten or compacted."""

    stream: str
    first: int
    last: int
    calls: int
    slope: float
    r2: float
    turns: int
    last_sequence: int


@dataclass(frozen=True)
class Carried:
    """A stream whose later runs start with earlier runs' Layer C (a fresh-mode candidate)."""

    stream: str
    pipeline: str
    step: str
    runs: int
    carried: int
    retrieval: int
    first_of_later: int


@dataclass(frozen=True)
class LargeResults:
    """One stream's tool results above the share of the soft cap: (seq, bytes) as its tails held them,
    its largest and the first of its sent calls after that one."""

    results: list[tuple[int, int]]
    largest: tuple[int, int]
    next_sequence: int


class OpenStream:
    """One stream while the pass is inside it: what its sent calls showed so far."""

    __slots__ = (
        "carried", "compacted", "count", "first_of_later", "fresh", "masked", "names", "order", "pipeline",
        "retrieval", "runs", "seen_runs", "seqs", "shaped_tail", "stream", "tails", "tools", "window", "ys",
    )  # fmt: skip

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self.order = -1  # among the streams with a sent call, by their first one
        self.pipeline: str | None = None
        self.count = 0
        self.compacted = False  # masked, forgotten from or compacted (a summary call, or a range away)
        self.masked = False
        self.ys = array("q")  # each sent call's size, for the growth fit
        self.seqs = array("q")
        self.seen_runs: set[str | None] = set()
        self.shaped_tail: Tail | None = None  # the tail of its last sent call with a shape
        self.tails: dict[int, Tail] = {}  # every tail its sent calls read, by first use (alive: ids unique)
        self.names: dict[str, str] = {}  # tool call id -> tool name, as its calls carried them
        self.tools: set[str] = set()  # the tools it called (ToolCallRequested)
        self.window = ToolWindow()  # its last call's tool results, totalled per tool
        self.fresh = False  # its step may be a fresh-mode candidate: its runs' carried bytes are summed
        self.carried = self.retrieval = self.runs = 0
        self.first_of_later: int | None = None


@dataclass
class Watch:
    """Pass one's calls (`feed`, in store order), then `finish`: the figures every detector reads."""

    reader: EventReader
    ends: dict[str, int]  # every stream's last global id (`stream_ends`)
    hard_cap: int
    soft_cap: int
    facts: ProjectFacts
    # store-wide, as the calls come
    failed: list[tuple[str, int, int]] = field(default_factory=list)  # hard-cap failures: stream, seq, bytes
    near: list[tuple[str, int, int]] = field(default_factory=list)  # sent within NEAR_MISS of the hard cap
    with_previous: int = 0  # sent calls with a previous call to share a prefix with
    policy_breaks: int = 0
    causes: Counter[str] = field(default_factory=Counter)
    worst: tuple[str, int, int] | None = None  # the policy break sharing the fewest messages
    policy_calls: list[list[object]] = field(default_factory=list)
    sent_bytes: Counter[str] = field(default_factory=Counter)  # per tool: its results' bytes as sent
    rent: Counter[str] = field(default_factory=Counter)
    first_use: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # tool -> (stream, call, entry)
    total_bytes: int = 0
    system_overwritten: list[tuple[str, int, int, str, int]] = field(default_factory=list)
    foreign: int = 0
    foreign_rewritten: int = 0
    # per stream, once closed (each list in the order of the streams' first sent call)
    max_turns: int = 0
    chats: list[tuple[int, str, int, int]] = field(default_factory=list)  # order, stream, user turns, last seq
    growth: list[tuple[int, Growth]] = field(default_factory=list)
    carried: list[tuple[int, Carried]] = field(default_factory=list)
    large: list[tuple[int, str, LargeResults]] = field(default_factory=list)
    calls_per_step: Counter[tuple[str, str]] = field(default_factory=Counter)
    called: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    # the open streams
    open: dict[str, OpenStream] = field(default_factory=dict)
    _closing: list[tuple[float, str]] = field(default_factory=list)  # heap of (last global id, stream)
    _streams_seen: int = 0
    _tools_after: int = 0  # ToolCallRequested read up to this global id
    _tools_done: bool = False

    # -- the pass --------------------------------------------------------------------------------
    async def feed(self, c: CallContext) -> None:
        if self._closing and self._closing[0][0] < c.global_id:
            await self._close_before(c.global_id)
        st = self._stream(c.stream_id)
        if c.is_compaction:
            st.compacted = True
        if c.hard_cap_failure and c.recorded_chars:
            self.failed.append((c.stream_id, c.sequence, c.recorded_chars))
        if c.foreign and not c.is_compaction and not c.hard_cap_failure:
            self.foreign += 1
            self.foreign_rewritten += c.rendered is not None and c.rendered.chars != c.recorded_chars
        if is_sent(c):
            self._sent(st, c)

    async def finish(self) -> None:
        await self._close_before(math.inf)

    def _stream(self, stream: str) -> OpenStream:
        st = self.open.get(stream)
        if st is None:
            st = self.open[stream] = OpenStream(stream)
            heapq.heappush(self._closing, (self.ends.get(stream, math.inf), stream))
        return st

    def _sent(self, st: OpenStream, c: CallContext) -> None:
        r = c.rendered
        assert r is not None
        if st.order < 0:
            st.order, self._streams_seen = self._streams_seen, self._streams_seen + 1
            st.pipeline = c.pipeline
            st.fresh = c.pipeline is not None and (c.pipeline, step_of_stream(st.stream)) not in self.facts.fresh_steps
        index, chars = st.count, r.chars
        st.count += 1
        st.ys.append(chars)
        st.seqs.append(c.sequence)
        if self.hard_cap and chars >= (1 - NEAR_MISS) * self.hard_cap:
            self.near.append((c.stream_id, c.sequence, chars))
        shape = r.shape
        if shape is not None:
            st.masked |= shape.mask_end > shape.cut
            st.shaped_tail = shape.tail
            st.tails.setdefault(id(shape.tail), shape.tail)
        st.compacted |= bool(r.forgotten or r.compacted_away)
        self._reuse(c)
        if shape is None:
            self._tools(st, index, r.entries)
        else:
            self._shape_tools(st, index, shape, r.message_count - (shape.n - shape.cut))
        self.total_bytes += chars
        if self.facts.provider == "anthropic":
            system = [e for e in r.entries if isinstance(e.message, SystemMessage)]
            if len(system) > 1:
                self.system_overwritten.append((c.stream_id, c.sequence, system[0].bytes, system[-1].layer,
                                                system[-1].bytes))  # fmt: skip
        first_of_run = c.correlation_id not in st.seen_runs
        st.seen_runs.add(c.correlation_id)
        if st.fresh and first_of_run and len(st.seen_runs) > 1:
            st.carried += r.layer_bytes.get("C", 0)
            st.retrieval += sum(
                e.bytes for e in r.entries if e.layer == "C" and isinstance(e.message, ToolResultMessage)
            )
            st.runs += 1
            if st.first_of_later is None:
                st.first_of_later = c.sequence

    def _reuse(self, c: CallContext) -> None:
        reuse = c.reuse
        if reuse is None or (reuse.messages == 0 and not reuse.broken):
            return
        self.with_previous += 1
        cause = cause_kind(c)
        if reuse.broken is None or cause not in POLICY_CAUSES:
            return
        self.policy_breaks += 1
        self.causes[cause] += 1
        if self.worst is None or reuse.messages < self.worst[2]:
            self.worst = (c.stream_id, c.sequence, reuse.messages)
        if len(self.policy_calls) < POLICY_CALLS_SHOWN:
            self.policy_calls.append([c.stream_id, c.sequence, reuse.messages])

    def _tools(self, st: OpenStream, index: int, entries: list[ContextEntry]) -> None:
        """Per tool, its results' bytes as sent and their rent (`zymi-tui rent`'s measure)."""
        for i, e in enumerate(entries):
            m = e.message
            if isinstance(m, AssistantMessage):
                st.window.name(st.names, m.tool_calls)
            elif isinstance(m, ToolResultMessage):
                tool = st.names.get(m.tool_call_id, "unknown")
                key, first = (st.order, index, i), self.first_use.get(tool)
                if first is None or key < first:  # the order the tools come in, stream after stream
                    self.first_use[tool] = key
                self.sent_bytes[tool] += e.bytes
                if not e.reason.startswith("masked"):
                    self.rent[tool] += e.bytes

    def _shape_tools(self, st: OpenStream, index: int, shape: Shape, before_c: int) -> None:
        """`_tools` of a built context's entries, read off its shape without making them: its Layer C
        items [cut, n) as `context_entries` shows them (`before_c`: how many entries come before them),
        each tool result counted at its shown size ("masked by" unless shown in full). The window's
        totals are kept from the stream's previous call (`ToolWindow`): only the results that entered
        it are read."""
        first_use, sent_bytes, rent = self.first_use, self.sent_bytes, self.rent
        at = (st.order, index, before_c - shape.cut)
        for j, tool, is_rent in st.window.move(shape, st.names):
            key, first = (at[0], at[1], at[2] + j), first_use.get(tool)
            if first is None or key < first:  # the order the tools come in, stream after stream
                first_use[tool] = key
            if tool not in sent_bytes:  # (keys made in the order a walk of the entries makes them)
                sent_bytes[tool] = 0
            if is_rent and tool not in rent:
                rent[tool] = 0
        for tool, (results, nbytes, shown, shown_bytes) in st.window.totals.items():
            if results:
                sent_bytes[tool] += nbytes
            if shown:
                rent[tool] += shown_bytes

    # -- the streams the pass has gone past --------------------------------------------------------
    async def _close_before(self, global_id: float) -> None:
        """Close every stream whose events all lie before `global_id` (the tools it called read first)."""
        while not self._tools_done and self._tools_after < global_id:
            page = await self.reader.read_kind_page(
                ToolCallRequested.TAG, stream_id=None, after_global_id=self._tools_after, limit=TOOL_PAGE
            )
            if not page:
                self._tools_done = True
                break
            self._tools_after = page[-1].global_id
            for se in page:
                if isinstance(se.event.kind, ToolCallRequested):
                    self._stream(se.event.stream_id).tools.add(se.event.kind.tool_name)
        while self._closing and self._closing[0][0] < global_id:
            _, stream = heapq.heappop(self._closing)
            self._close(self.open.pop(stream))

    def _close(self, st: OpenStream) -> None:
        if st.count == 0:
            return
        order, stream = st.order, st.stream
        self.max_turns = max(self.max_turns, max((len(t.turn_starts) for t in st.tails.values()), default=0))
        turns = len(st.seen_runs - {None})
        if turns >= CHAT_TURNS:
            self.chats.append((order, stream, turns, st.seqs[-1]))
        if st.count >= MIN_CALLS_FOR_GROWTH and not st.masked and not st.compacted:
            ys = st.ys.tolist()
            r2, slope = linear_fit(ys)
            if slope > 0 and r2 >= 0.8 and ys[-1] >= 2 * max(ys[0], 1):
                last_turns = len(st.shaped_tail.turn_starts) if st.shaped_tail is not None else 0
                self.growth.append((order, Growth(stream, ys[0], ys[-1], st.count, slope, r2, last_turns, st.seqs[-1])))
        self._large(st)
        if st.fresh and st.runs and st.carried and st.retrieval / st.carried >= 0.5 and st.first_of_later is not None:
            assert st.pipeline is not None
            carried = Carried(stream, st.pipeline, step_of_stream(stream), st.runs, st.carried, st.retrieval,
                              st.first_of_later)  # fmt: skip
            self.carried.append((order, carried))
        if st.pipeline is not None:
            key = (st.pipeline, step_of_stream(stream))
            self.calls_per_step[key] += st.count
            self.called.setdefault(key, set()).update(st.tools)

    def _large(self, st: OpenStream) -> None:
        """Every tool result the stream ever carried, at its full size, above the share of the soft cap."""
        limit = LARGE_RESULT_SHARE * self.soft_cap
        big: dict[int, int] = {}
        for tail in st.tails.values():
            for raw in tail.items:  # (by its kind: an old item's message is read back from the store)
                if raw.bytes > limit and raw.kind == TOOL and not raw.simulated:
                    big[raw.seq] = raw.bytes
        if not big:
            return
        seq, nbytes = max(big.items(), key=lambda kv: kv[1])
        after = next((q for q in st.seqs if q > seq), st.seqs[-1])
        self.large.append((st.order, st.stream, LargeResults(list(big.items()), (seq, nbytes), after)))
