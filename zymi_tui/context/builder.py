"""zymi 0.9.3's ContextBuilder (context_builder.rs), incremental and re-renderable.

Layer A (system prompt, task), Layer B (`[memory]` snapshot), Layer C (the step stream's
messages: ContextCompacted ranges suppressed, `context.mode: fresh` filter), then forget,
observation masking, the soft-cap compaction plan and the hard-cap check, with the rules of
docs/context.md (which every recorded call confirms).

Incremental: `add()` keeps Layer C as a list with running byte sums and turn boundaries, so
`build()` computes the totals in O(1) and the message list only when it is asked for.
A ContextCompacted event (rare) re-derives Layer C from the stored items with bisection.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache, partial
from typing import Any, NamedTuple

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.masking import (
    CONTENT_PREVIEW_BYTES,
    ELLIPSIS,
    compaction_input,
    floor_bytes,
    memory_text,
    message_bytes,
    placeholder,
)
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolCallInfo,
    ToolResultMessage,
    UserMessage,
    to_wire,
)
from zymi_tui.events.replay_kinds import (
    ContextCompacted,
    LlmCallCompleted,
    ReplayEvent,
    ToolCallCompleted,
    UserMessageReceived,
)
from zymi_tui.events.timestamps import parse_timestamp_ns

COMPACTION_PROMPT = (
    "You are compressing a sequence of masked observations from an autonomous agent's history. "
    "Each entry shows what tool was called and whether it succeeded. Produce a single paragraph "
    "summarizing: (a) what the agent accomplished in this span, (b) any errors or dead ends, "
    "(c) any decisions the agent committed to. Do NOT preserve individual tool call details "
    "— the summary replaces them entirely."
)
COMPACTED_HEADER = "[compacted history]\n"

_ASSISTANT, _TOOL, _OTHER = 0, 1, 2


@dataclass(frozen=True)
class Prefix:
    """Layer A. Without the project, only its size can be inferred (`inferred_bytes`)."""

    system_prompt: str
    task: str  # the resolved user message ("" -> no user message)
    inferred_bytes: int | None = None
    inferred_count: int = 2
    basis: str | None = None  # an inferred prefix: how its size was found

    @property
    def inferred(self) -> bool:
        return self.inferred_bytes is not None


@dataclass
class ContextEntry:
    """One message of a rendered list (or one that was left out), and why it looks as it does."""

    message: MessageModel
    layer: str  # "A" | "B" | "C"
    bytes: int  # UTF-8 bytes counted by zymi (estimated for a simulated summary)
    reason: str
    source_seq: int | None = None
    simulated: bool = False

    @property
    def tokens(self) -> int:
        from zymi_tui.context.tokens import estimate_message_tokens

        if self.simulated or (self.layer == "A" and self.reason.startswith("inferred")):
            return max(1, round(self.bytes / 4))  # no text to count: ~4 bytes per token
        return estimate_message_tokens(self.message)


@dataclass
class CompactionPlan:
    """What zymi does at the soft cap: summarise the masked span (`request_messages`), replacing the
    seq range."""

    replaces_seq_range: tuple[int, int]
    span: list[MessageModel]  # the span's messages as shown when the plan was made
    span_bytes: int  # bytes_saved = span_bytes - len(summary.encode())
    turns: int = 0

    @cached_property
    def request_messages(self) -> list[MessageModel]:
        """The compaction call's request (made when first asked for: a what-if applies the compaction
        at once and makes its row, which shows the request, after the picked call's figures)."""
        return [SystemMessage(content=COMPACTION_PROMPT), UserMessage(content=compaction_input(self.span))]

    @property
    def request_chars(self) -> int:
        return sum(message_bytes(m) for m in self.request_messages)


@dataclass(slots=True, unsafe_hash=True)
class Shape:
    """Where a built context's messages come from, kept so that two calls' lists can be compared
    without materialising them (context/reuse.py): Layer A, the memory snapshot, and Layer C as
    items [cut, n) of `tail`, those before `mask_end` in their masked form. Never changed once made
    (compared and hashed by value), but not frozen: one is made for every build, and for every call
    of a what-if on each edit (a frozen dataclass sets each field through `object.__setattr__`)."""

    prefix: Prefix
    memory: tuple[tuple[str, str], ...]
    tail: _Tail
    cut: int
    mask_end: int
    n: int
    compactions: tuple[tuple[int, int], ...]
    knobs: ContextKnobs


@dataclass
class RenderedContext:
    """A built context. Totals are exact and cheap; `entries` is materialised on first use."""

    chars: int  # approx_context_chars
    message_count: int
    compaction: CompactionPlan | None
    hard_cap_exceeded: bool
    knobs: ContextKnobs
    layer_bytes: dict[str, int]
    forgotten: int = 0  # Layer C messages dropped by forget_after_turns
    dropped_by_fresh: int = 0  # step-stream messages hidden by context.mode: fresh
    compacted_away: int = 0  # step-stream messages inside a compacted range
    prefix_inferred: bool = False
    shape: Shape | None = field(default=None, repr=False)  # None: a compaction call's own request
    _make_entries: Callable[[], list[ContextEntry]] = field(default=list, repr=False)
    _make_dropped: Callable[[], list[ContextEntry]] = field(default=list, repr=False)

    @cached_property
    def entries(self) -> list[ContextEntry]:
        return self._make_entries()

    @cached_property
    def dropped(self) -> list[ContextEntry]:
        """Messages left out by forget_after_turns (with their reasons)."""
        return self._make_dropped()

    @property
    def messages(self) -> list[MessageModel]:
        return [e.message for e in self.entries]

    def wire(self) -> list[dict[str, Any]]:
        return [to_wire(m) for m in self.messages]


@dataclass(slots=True)
class _Raw:
    """A step-stream event that becomes a Layer C message (converted once)."""

    seq: int
    ts: int
    message: MessageModel
    bytes: int
    kind: int
    note: str | None = None  # a summary's or a simulated message's reason
    simulated: bool = False
    masked_for: int = -1  # id() of the turn head its masked form was made for (0: an assistant)
    masked_text: str | None = None  # the masked content (None: unchanged)
    masked_bytes: int = 0
    masked: MessageModel | None = None  # the masked message, made when first shown
    calls: dict[str, ToolCallInfo] | None = None  # an assistant's tool calls by id

    def masked_message(self) -> MessageModel:
        if self.masked is None:
            m = self.message
            if self.masked_text is None:
                self.masked = m
            elif isinstance(m, AssistantMessage):
                self.masked = AssistantMessage(content=self.masked_text, tool_calls=m.tool_calls)
            else:
                assert isinstance(m, ToolResultMessage)
                self.masked = ToolResultMessage(tool_call_id=m.tool_call_id, content=self.masked_text)
        return self.masked


def _kind_of(message: MessageModel) -> int:
    if isinstance(message, AssistantMessage):
        return _ASSISTANT
    if isinstance(message, ToolResultMessage):
        return _TOOL
    return _OTHER


class _Tail:
    """Layer C before forget/masking, with turn boundaries and running byte sums."""

    __slots__ = ("cum_full", "cum_masked", "head", "hidden_by_fresh", "items", "summaries", "turn_ends", "turn_starts")

    def __init__(self) -> None:
        self.items: list[_Raw] = []
        self.turn_starts: list[int] = []
        self.turn_ends: list[int] = []
        self.cum_full: list[int] = [0]
        self.cum_masked: list[int] = [0]
        self.head: _Raw | None = None  # the assistant of the open turn
        self.summaries = 0  # `[compacted history]` messages among the items
        self.hidden_by_fresh = 0  # stored items older than the fresh cutoff

    def append(self, raw: _Raw) -> None:
        n = len(self.items)
        masked_bytes = raw.bytes
        if raw.kind == _ASSISTANT:
            self.turn_starts.append(n)
            self.turn_ends.append(n + 1)
            self.head = raw
            if raw.masked_for != 0:
                content = raw.message.content
                if raw.simulated:  # no real text: only its estimated size is cut
                    raw.masked_text, raw.masked_bytes = (
                        None,
                        min(raw.bytes, CONTENT_PREVIEW_BYTES + len(ELLIPSIS.encode())),
                    )
                elif content is not None and raw.bytes > CONTENT_PREVIEW_BYTES:
                    raw.masked_text = floor_bytes(content, CONTENT_PREVIEW_BYTES) + ELLIPSIS
                    raw.masked_bytes = len(raw.masked_text.encode())
                else:
                    raw.masked_text, raw.masked_bytes = None, raw.bytes
                raw.masked, raw.masked_for = None, 0
            masked_bytes = raw.masked_bytes
        elif raw.kind == _TOOL and self.head is not None:
            self.turn_ends[-1] = n + 1
            if raw.masked_for != id(self.head):
                head = self.head
                if head.calls is None:
                    head.calls = {c.id: c for c in head.message.tool_calls}  # type: ignore[union-attr]
                msg = raw.message
                assert isinstance(msg, ToolResultMessage)
                raw.masked_text = placeholder(head.calls.get(msg.tool_call_id), msg.content, raw.bytes)
                raw.masked_bytes = len(raw.masked_text.encode())
                raw.masked, raw.masked_for = None, id(head)
            masked_bytes = raw.masked_bytes
        else:
            self.head = None
            if raw.note is not None and raw.kind == _OTHER:
                self.summaries += 1
        self.items.append(raw)
        self.cum_full.append(self.cum_full[-1] + raw.bytes)
        self.cum_masked.append(self.cum_masked[-1] + masked_bytes)

    def extend(self, base: _Tail, start: int, end: int) -> None:
        """Append `base`'s items [start, end) as `append` does one by one, from `base`'s running sums
        and turns, where `base` appended the same items (the same objects: their masked forms are
        made already) in the same turns: true from the first item that is not a tool result (a tool
        result joins this tail's open turn, which may not be the one it joined in `base`)."""
        items = base.items
        while start < end and items[start].kind == _TOOL:
            self.append(items[start])
            start += 1
        if start >= end:
            return
        off = len(self.items) - start
        full, masked = self.cum_full[-1] - base.cum_full[start], self.cum_masked[-1] - base.cum_masked[start]
        self.items += items[start:end]
        self.cum_full += [v + full for v in base.cum_full[start + 1 : end + 1]]
        self.cum_masked += [v + masked for v in base.cum_masked[start + 1 : end + 1]]
        lo = bisect.bisect_left(base.turn_starts, start)
        hi = bisect.bisect_left(base.turn_starts, end)
        self.turn_starts += [t + off for t in base.turn_starts[lo:hi]]
        self.turn_ends += [min(t, end) + off for t in base.turn_ends[lo:hi]]
        # the open turn's assistant: the last turn's, if its items run to the end (else an item that is
        # not part of a turn came after it, or no turn started: `append` left None)
        self.head = items[base.turn_starts[hi - 1]] if hi > lo and min(base.turn_ends[hi - 1], end) == end else None
        self.summaries += sum(1 for r in items[start:end] if r.kind == _OTHER and r.note is not None)

    def clone(self) -> _Tail:
        other = copy.copy(self)
        other.items, other.turn_starts, other.turn_ends = list(self.items), list(self.turn_starts), list(self.turn_ends)
        other.cum_full, other.cum_masked = list(self.cum_full), list(self.cum_masked)
        return other

    def in_turn(self, index: int) -> bool:
        """Whether item `index` belongs to a turn (so has a masked form)."""
        t = bisect.bisect_right(self.turn_starts, index) - 1
        return t >= 0 and index < self.turn_ends[t]


def to_message(event: Any) -> MessageModel | None:
    """The Layer C message of an event kind, or None for kinds zymi skips."""
    if isinstance(event, LlmCallCompleted):
        if event.response_message is not None:
            return event.response_message
        return AssistantMessage(content=event.content_preview, tool_calls=())
    if isinstance(event, ToolCallCompleted):
        return ToolResultMessage(tool_call_id=event.call_id, content=event.result or event.result_preview)
    if isinstance(event, UserMessageReceived):
        return event.content
    return None


@lru_cache(maxsize=4096)
def _utc_seconds(date_time: str) -> int:
    """`YYYY-MM-DDTHH:MM:SS` (UTC) in seconds since the epoch; events of one second share the result."""
    return int(datetime.fromisoformat(date_time + "+00:00").timestamp())


@lru_cache(maxsize=1024)
def fast_ts_ns(text: str) -> int:
    """`parse_timestamp_ns` with a fast path for zymi's `YYYY-MM-DDTHH:MM:SS[.f]Z`; remembered, as an
    event's timestamp is asked for by every replayer it is fed to, and more than once by each."""
    if len(text) >= 20 and text[-1] == "Z" and text[10] == "T" and (len(text) == 20 or text[19] == "."):
        secs = _utc_seconds(text[:19])
        frac = text[20:-1]
        return secs * 1_000_000_000 + (int(frac.ljust(9, "0")[:9]) if frac else 0)
    return parse_timestamp_ns(text)


def convert(ev: ReplayEvent) -> tuple[int, _Raw | None]:
    """An event's timestamp (ns) and its Layer C message (None: a kind zymi skips)."""
    message = to_message(ev.kind)
    ts = fast_ts_ns(ev.timestamp)
    return ts, None if message is None else _Raw(ev.sequence, ts, message, message_bytes(message), _kind_of(message))


class Converted:
    """The Layer C message of each event, converted once (timestamp, message, bytes, masked forms) and
    shared by every builder fed the same events: a what-if re-run of a stream starts from these.
    The masked form of an item depends only on its turn's head, which the re-runs share, so the
    items can be shared too."""

    def __init__(self, *, keep_all: bool = True) -> None:
        """`keep_all=False`: only the last event's (builders fed one event after another, as the
        replayers of one pass over a store under several knob sets are; memory stays flat)."""
        self._by_id: dict[int, tuple[ReplayEvent, int, _Raw | None]] = {}
        self._keep_all = keep_all

    def get(self, ev: ReplayEvent) -> tuple[int, _Raw | None]:
        hit = self._by_id.get(id(ev))
        if hit is None or hit[0] is not ev:
            if not self._keep_all:
                self._by_id.clear()
            hit = self._by_id[id(ev)] = (ev, *convert(ev))
        return hit[1], hit[2]


@dataclass(slots=True)
class _Compaction:
    lo: int
    hi: int
    summary: str
    simulated: bool = False
    estimated_bytes: int | None = None


@dataclass(slots=True)
class RecordedCompaction:
    """A compaction found on the stream: its range, summary and reply (what-if matches on these)."""

    seq: int
    lo: int
    hi: int
    summary: str
    bytes_saved: int
    reply: MessageModel | None
    reply_seq: int | None = None
    used: bool = False


@dataclass(frozen=True, slots=True)
class BuildMark:
    """A builder's state at one moment: the lengths of its append-only lists and its few other fields
    (`ContextBuilder.mark`); another builder fed the same events can be brought there (`follow`)."""

    raw: int
    seen: int
    recorded: int
    tail: _Tail
    n: int
    last_seq: int
    last_ts: int
    monotone: bool
    last_was_compaction: bool
    pending_reply: tuple[MessageModel, int] | None
    prefix: Prefix
    cutoff: int | None


class ContextBuilder:
    """Incremental: feed the step stream's events once, in sequence order; build() at each call."""

    def __init__(
        self,
        knobs: ContextKnobs,
        prefix: Prefix,
        *,
        fresh_cutoff_ns: int | None = None,
        follow_recorded_compactions: bool = True,
    ) -> None:
        self.knobs = knobs
        self.prefix = prefix
        self._cutoff = fresh_cutoff_ns
        self._follow = follow_recorded_compactions
        self._raw: list[_Raw] = []
        self._raw_seqs: list[int] = []
        self._seen_seqs: list[int] = []  # events seen, in order (a replay may skip kinds zymi ignores)
        self._seen_ts: list[int] = []
        self._monotone = True
        self._last_ts = -1
        self._compactions: list[_Compaction] = []
        self._max_hi = -1
        self._tail = _Tail()
        # Layer C without a fresh cutoff, kept up to date while a cutoff is set (None otherwise, or
        # not known): a step run whose Layer A is inferred tries the tail without, then with its
        # cutoff, at every run of a long stream; recomputing the whole history each time was quadratic
        self._uncut_tail: _Tail | None = None
        self.last_seq = 0
        self.last_was_compaction = False
        self.recorded: list[RecordedCompaction] = []
        self._a_cache: tuple[Prefix, int, int] | None = None
        self._pending_reply: tuple[MessageModel, int] | None = None

    # ---- feeding -------------------------------------------------------------------------
    def set_prefix(self, prefix: Prefix, fresh_cutoff_ns: int | None = None) -> None:
        """A new run of the step: its Layer A and its fresh cutoff (Layer C carries over)."""
        self.prefix = prefix
        if fresh_cutoff_ns == self._cutoff:
            return
        if fresh_cutoff_ns is None:  # back to the uncut tail (kept up to date while the cutoff was set)
            self._tail, self._uncut_tail = self._uncut(), None
        else:
            if self._cutoff is None:
                self._uncut_tail = self._tail
            self._tail = self._compute_tail(fresh_cutoff_ns)
        self._cutoff = fresh_cutoff_ns

    def add(self, ev: ReplayEvent, converted: Converted | None = None) -> None:
        """Any event of the step stream, in sequence order (kinds zymi skips are only timed).
        `converted`: messages already converted for these events (shared by re-runs of one stream)."""
        ts, raw = convert(ev) if converted is None else converted.get(ev)
        seq = ev.sequence
        self._seen_seqs.append(seq)
        self._seen_ts.append(ts)
        if ts < self._last_ts:
            self._monotone = False
        self._last_ts = ts
        self.last_seq = seq
        kind = ev.kind
        self.last_was_compaction = isinstance(kind, ContextCompacted)
        if isinstance(kind, ContextCompacted):
            lo, hi = kind.replaces_seq_range
            reply, reply_seq = self._pending_reply or (None, None)
            self.recorded.append(RecordedCompaction(seq, lo, hi, kind.summary, kind.bytes_saved, reply, reply_seq))
            self._pending_reply = None
            if self._follow:
                self._add_compaction(_Compaction(lo, hi, kind.summary))
            return
        if raw is None:
            return
        if ev.source == "compaction" and not self._follow:
            self._pending_reply = (raw.message, seq)  # what-if decides whether this reply exists
            return
        self._append_raw(raw)

    def _append_raw(self, raw: _Raw) -> None:
        self._raw.append(raw)
        self._raw_seqs.append(raw.seq)
        if self._suppressed(raw.seq):
            return
        if self._cutoff is None or raw.ts >= self._cutoff:
            self._tail.append(raw)
        if self._uncut_tail is not None:
            self._uncut_tail.append(raw)

    def _suppressed(self, seq: int) -> bool:
        return seq <= self._max_hi and any(c.lo <= seq <= c.hi for c in self._compactions)

    def _add_compaction(self, c: _Compaction) -> None:
        self._compactions.append(c)
        self._max_hi = max(self._max_hi, c.hi)
        self._uncut_tail = None
        self._tail = self._compute_tail(self._cutoff)

    def _uncut(self) -> _Tail:
        """Layer C without the fresh cutoff (the current tail when there is none)."""
        if self._cutoff is None:
            return self._tail
        if self._uncut_tail is None:
            self._uncut_tail = self._compute_tail(None)
        return self._uncut_tail

    # ---- Layer C from the items -----------------------------------------------------------
    def _visible(self, seq: int, cutoff: int | None) -> bool:
        ts = self._ts_at(seq)
        return ts is not None and (cutoff is None or ts >= cutoff)

    def _ts_at(self, seq: int) -> int | None:
        """The timestamp of event `seq` (sequences are contiguous from 1; an event not fed to the
        builder takes the next fed one's timestamp, as zymi's clock only moves forward)."""
        if seq < 1 or seq > self.last_seq:
            return None
        i = bisect.bisect_left(self._seen_seqs, seq)
        return self._seen_ts[i] if i < len(self._seen_ts) else None

    def _compute_tail(self, cutoff: int | None) -> _Tail:
        ranges = sorted((c.lo, c.hi) for c in self._compactions if c.lo <= c.hi)
        merged: list[tuple[int, int]] = []
        for lo, hi in ranges:
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))

        def in_range(seq: int) -> bool:
            i = bisect.bisect_right(merged, (seq, 1 << 62)) - 1
            return i >= 0 and merged[i][0] <= seq <= merged[i][1]

        # one pointer over the summaries sorted by range start (docs/context.md#compaction)
        summaries: list[_Raw] = []
        last = -1
        for c in sorted(self._compactions, key=lambda c: c.lo):
            if c.lo > last and self._visible(c.lo, cutoff) and in_range(c.lo):
                text = COMPACTED_HEADER + c.summary
                nbytes = len(text.encode())
                if c.estimated_bytes is not None:
                    nbytes = len(COMPACTED_HEADER.encode()) + c.estimated_bytes
                note = f"{'simulated summary' if c.simulated else 'summary'} replacing compaction of seq {c.lo}..{c.hi}"
                summaries.append(_Raw(c.lo, self._ts_at(c.lo) or 0, SystemMessage(content=text), nbytes, _OTHER, note))
                summaries[-1].simulated = c.simulated
                last = c.lo
            else:
                break

        start = 0
        if cutoff is not None and self._monotone:
            lo_i, hi_i = 0, len(self._raw)
            while lo_i < hi_i:
                mid = (lo_i + hi_i) // 2
                if self._raw[mid].ts < cutoff:
                    lo_i = mid + 1
                else:
                    hi_i = mid
            start = lo_i
        visible: list[_Raw] = []
        pos = start
        hidden = start
        if cutoff is not None and not self._monotone:
            hidden = sum(1 for r in self._raw if r.ts < cutoff)
        for lo, hi in [*merged, (1 << 62, 1 << 62)]:
            end = bisect.bisect_left(self._raw_seqs, lo, pos)
            visible.extend(r for r in self._raw[pos:end] if cutoff is None or r.ts >= cutoff)
            pos = max(pos, bisect.bisect_right(self._raw_seqs, hi, pos))
            if pos >= len(self._raw):
                break
        for s in summaries:
            keys = [r.seq for r in visible]
            visible.insert(bisect.bisect_left(keys, s.seq), s)
        tail = _Tail()
        tail.hidden_by_fresh = hidden
        for r in visible:
            tail.append(r)
        return tail

    # ---- building -------------------------------------------------------------------------
    def _layer_a(self) -> tuple[int, int]:
        p = self.prefix
        if p.inferred_bytes is not None:
            return p.inferred_bytes, p.inferred_count
        if self._a_cache is None or self._a_cache[0] is not p:
            self._a_cache = (p, len(p.system_prompt.encode()) + len(p.task.encode()), 2 if p.task else 1)
        return self._a_cache[1], self._a_cache[2]

    def build(
        self,
        memory: Sequence[tuple[str, str]] = (),
        *,
        allow_compaction: bool = True,
        apply_fresh: bool = True,
        knobs: ContextKnobs | None = None,
    ) -> RenderedContext:
        """The context zymi sends now: layers A/B/C, forget, mask, soft-cap plan, hard-cap flag.

        `allow_compaction=False, apply_fresh=False` is zymi's rebuild right after a compaction
        (no second compaction; the stream is re-read without the fresh filter, docs/context.md#fresh-mode).
        `knobs` re-renders under other knobs without touching the builder's state.
        """
        tail = self._tail if apply_fresh else self._uncut()
        n = len(tail.items)
        frame = _Frame(
            self.prefix,
            *self._layer_a(),
            tail,
            n,
            len(tail.turn_starts),
            tail.turn_ends,
            len(self._raw) - (n - tail.summaries) - tail.hidden_by_fresh,
            tuple((c.lo, c.hi) for c in self._compactions),
        )
        return _render(frame, list(memory), knobs or self.knobs, allow_compaction)

    def plan_compaction(self, knobs: ContextKnobs | None = None) -> CompactionPlan | None:
        """The compaction zymi would make now if the soft cap were exceeded (None: too few turns)."""
        tail = self._tail
        n_turns = len(tail.turn_starts)
        return _plan(tail, knobs or self.knobs, len(tail.items), n_turns, tail.turn_ends)

    def clone(self) -> ContextBuilder:
        """An independent copy of this builder's state (the items themselves are shared: they are only
        appended, and their masked forms depend on their turn's head alone): a what-if can go on from
        here under other knobs while this builder stays as it is."""
        other = copy.copy(self)
        other._raw, other._raw_seqs = list(self._raw), list(self._raw_seqs)
        other._seen_seqs, other._seen_ts = list(self._seen_seqs), list(self._seen_ts)
        other._compactions = list(self._compactions)
        other._tail = self._tail.clone()
        other._uncut_tail = None  # made again when needed
        other.recorded = [dataclasses.replace(rc) for rc in self.recorded]
        return other

    def mark(self) -> BuildMark:
        """This builder's state now (see `BuildMark`)."""
        return BuildMark(
            len(self._raw), len(self._seen_seqs), len(self.recorded), self._tail, len(self._tail.items),
            self.last_seq, self._last_ts, self._monotone, self.last_was_compaction, self._pending_reply,
            self.prefix, self._cutoff,
        )  # fmt: skip

    @property
    def tail(self) -> _Tail:
        """Layer C before forget and masking (appended to as events come; replaced by a compaction)."""
        return self._tail

    def can_follow(self, tail: _Tail, index: int) -> bool:
        """Whether this builder, just compacted, can go on with `tail`'s items from `index` as `follow`
        appends them: the first is not inside a compacted range, and is not a tool result (which would
        join this builder's last turn, not the turn it joins in `tail`)."""
        if index >= len(tail.items):
            return True
        first = tail.items[index]
        return first.seq > self._max_hi and first.kind != _TOOL

    def follow(self, base: ContextBuilder, since: BuildMark | None, now: BuildMark) -> bool:
        """Feed this what-if builder what `base` (a what-if builder of the same step stream that never
        compacts, no fresh cutoff) was fed from `since` (None: its start; this builder was brought
        there before) to `now`, as `add` would have, without the events: the same items appended in
        the same turns (after a compaction, as long as `can_follow` said so), the same recorded
        compactions (copies: this builder marks its own as used). False, and nothing done, if an item
        would fall inside a compacted range (none can: every range ends at an item already seen)."""
        r0, s0, c0, n0 = (since.raw, since.seen, since.recorded, since.n) if since else (0, 0, 0, 0)
        items = now.tail.items
        if n0 < now.n and items[n0].seq <= self._max_hi:
            return False
        self._raw += base._raw[r0 : now.raw]
        self._raw_seqs += base._raw_seqs[r0 : now.raw]
        self._seen_seqs += base._seen_seqs[s0 : now.seen]
        self._seen_ts += base._seen_ts[s0 : now.seen]
        self.recorded += [dataclasses.replace(rc) for rc in base.recorded[c0 : now.recorded]]
        self._tail.extend(now.tail, n0, now.n)
        self._uncut_tail = None
        self.last_seq, self._last_ts, self._monotone = now.last_seq, now.last_ts, now.monotone
        self.last_was_compaction, self._pending_reply = now.last_was_compaction, now.pending_reply
        self.prefix = now.prefix
        return True

    @staticmethod
    def _shown(tail: _Tail, cut: int, end: int, mask_end: int) -> list[MessageModel]:
        """Items [cut, end) as shown: those before `mask_end` that belong to a turn in their masked
        form (walked turn by turn: a compaction's span is thousands of items on a long run)."""
        items, starts, ends = tail.items, tail.turn_starts, tail.turn_ends
        out = [r.message for r in items[cut:end]]
        lim = min(end, mask_end)
        t = max(0, bisect.bisect_right(starts, cut) - 1)
        while t < len(starts) and starts[t] < lim:
            for i in range(max(starts[t], cut), min(ends[t], lim)):
                r = items[i]
                if r.masked_for != -1:
                    out[i - cut] = r.masked_message()
            t += 1
        return out

    @staticmethod
    def _entries(
        p: Prefix,
        tail: _Tail,
        n: int,
        k: ContextKnobs,
        mem: list[tuple[str, str]],
        b_text: str,
        cut: int,
        mask_end: int,
    ) -> list[ContextEntry]:
        out: list[ContextEntry] = []
        if p.inferred_bytes is not None:
            note = f"inferred: Layer A is {p.inferred_bytes} bytes (recorded total minus the rebuilt rest)"
            out.append(
                ContextEntry(SystemMessage(content="[inferred prefix: no project]"), "A", p.inferred_bytes, note)
            )
            if p.inferred_count > 1:
                out.append(ContextEntry(UserMessage(content="[inferred task: no project]"), "A", 0, note))
        else:
            out.append(
                ContextEntry(
                    SystemMessage(content=p.system_prompt), "A", len(p.system_prompt.encode()), "kept: system prompt"
                )
            )
            if p.task:
                out.append(ContextEntry(UserMessage(content=p.task), "A", len(p.task.encode()), "kept: task"))
        if mem:
            cut_values = any(len(v.encode()) > 200 for _, v in mem)
            reason = "memory snapshot" + ("; values cut to 200 bytes" if cut_values else "")
            out.append(ContextEntry(SystemMessage(content=b_text), "B", len(b_text.encode()), reason))
        window = f"observation_window={k.observation_window}"
        for i in range(cut, n):
            r = tail.items[i]
            if i < mask_end and r.masked_for != -1 and tail.in_turn(i):
                if r.kind == _TOOL:
                    reason = f"masked by {window}"
                elif r.masked_text is not None:
                    reason = f"cut to 200 bytes (turn masked by {window})"
                else:
                    reason = f"kept (turn masked by {window})"
                out.append(ContextEntry(r.masked_message(), "C", r.masked_bytes, reason, r.seq, r.simulated))
            else:
                out.append(ContextEntry(r.message, "C", r.bytes, r.note or "kept", r.seq, r.simulated))
        return out

    # ---- what-if --------------------------------------------------------------------------
    def apply_compaction(
        self,
        plan: CompactionPlan,
        summary: str,
        reply: MessageModel | None,
        *,
        simulated: bool = False,
        estimated_bytes: int | None = None,
        reply_seq: int | None = None,
    ) -> None:
        """Apply a compaction decided by a what-if: its reply joins Layer C, its range is suppressed.

        A recorded reply keeps its sequence; a simulated one takes the last event's."""
        if reply is not None:
            seq = self.last_seq if reply_seq is None else reply_seq
            raw = _Raw(seq, self._ts_at(seq) or self._last_ts, reply, message_bytes(reply), _kind_of(reply))
            if simulated and estimated_bytes is not None:
                raw.bytes = estimated_bytes
                raw.note = "simulated compaction reply (size estimated)"
                raw.simulated = True
            self._append_raw(raw)
        lo, hi = plan.replaces_seq_range
        self._add_compaction(_Compaction(lo, hi, summary, simulated, estimated_bytes))

    def take_recorded(self, seq_range: tuple[int, int]) -> RecordedCompaction | None:
        """An unused recorded compaction with this range, marked used."""
        for rc in self.recorded:
            if not rc.used and (rc.lo, rc.hi) == seq_range:
                rc.used = True
                return rc
        return None


@dataclass(slots=True)
class _Frame:
    """What a build renders: Layer A, and Layer C as the first `n` items of `tail` (its first `n_turns`
    turns; `ends[t]` is where turn t ends, the last one as it was then: see `_Ends`). Made for every
    build, and for every call of a what-if on each edit: not frozen (a frozen dataclass sets each
    field through `object.__setattr__`: 1.9 instead of 0.4 µs)."""

    prefix: Prefix
    a_bytes: int
    a_count: int
    tail: _Tail
    n: int
    n_turns: int
    ends: Sequence[int]
    compacted_away: int
    compactions: tuple[tuple[int, int], ...]


class _Ends(Sequence[int]):
    """A tail's turn ends as they were when it held `n` items: the turns are those started before
    item n, and the last of them ended at min(its end now, n) (a turn only grows by the items
    appended right after it, until a message that is not its tool result closes it for good)."""

    def __init__(self, ends: list[int], n_turns: int, n: int) -> None:
        self._ends, self._n_turns = ends, n_turns
        self._last = min(ends[n_turns - 1], n) if n_turns else 0

    def __len__(self) -> int:
        return self._n_turns

    def __getitem__(self, t: Any) -> Any:
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(self._n_turns))]
        if t < 0:
            t += self._n_turns
        if not 0 <= t < self._n_turns:
            raise IndexError(t)
        return self._last if t == self._n_turns - 1 else self._ends[t]


class Splice(Sequence[int]):
    """Layer C of a what-if builder that follows a base builder (`ContextBuilder.follow`) at a later
    call, without appending anything: the tail its last compaction left (`head`: its first `m` items
    and their turns) and then the base tail's items from `start` on, which it appends as they come
    (the same items, in the same turns). A build's figures come from the two tails' running sums and
    turn ends (`figures`, O(log n)); the tail itself (`head`, which goes on growing) is needed only
    for the messages. Before any compaction `head` is empty and `start` 0. As a sequence: the turn
    ends of the build being figured (see `_Ends`)."""

    __slots__ = ("_n", "_n_turns", "base", "ff", "fm", "head", "m", "off", "start", "start_turn", "turns")

    def __init__(self, head: _Tail, base: _Tail, start: int) -> None:
        self.head, self.base, self.start = head, base, start
        self.m, self.turns = len(head.items), len(head.turn_starts)
        self.start_turn = bisect.bisect_left(base.turn_starts, start)
        self.off = self.m - start
        self.fm = head.cum_masked[self.m] - base.cum_masked[start]
        self.ff = head.cum_full[self.m] - base.cum_full[start]
        self._n = self._n_turns = 0

    def __len__(self) -> int:
        return self._n_turns

    def __getitem__(self, t: Any) -> Any:
        if t < self.turns:
            return self.head.turn_ends[t]
        end = self.base.turn_ends[t - self.turns + self.start_turn] + self.off
        return min(end, self._n) if t == self._n_turns - 1 else end

    def figures(self, n_base: int, k: ContextKnobs) -> tuple[int, int, int, int, int]:
        """A build when the base tail held `n_base` items: (n, n_turns, forget cut, masked end, Layer C
        bytes), as `_render` finds them on the spliced tail (the running sums read inline: this is
        done for every call of a stream on every edit)."""
        off, m = self.off, self.m
        n = self._n = n_base + off
        n_turns = self._n_turns = self.turns + bisect.bisect_left(self.base.turn_starts, n_base) - self.start_turn
        _, cut, mask_end = _bounds(k, n_turns, self)
        head, base = self.head, self.base
        full_n = head.cum_full[n] if n <= m else base.cum_full[n_base] + self.ff
        if mask_end <= m:
            full_end, masked_end = head.cum_full[mask_end], head.cum_masked[mask_end]
        else:
            full_end, masked_end = base.cum_full[mask_end - off] + self.ff, base.cum_masked[mask_end - off] + self.fm
        masked_cut = head.cum_masked[cut] if cut <= m else base.cum_masked[cut - off] + self.fm
        return n, n_turns, cut, mask_end, layer_c_bytes(masked_cut, masked_end, full_end, full_n)


def layer_c_bytes(masked_cut: int, masked_end: int, full_end: int, full_n: int) -> int:
    """Layer C's bytes from a tail's running sums: the items from the forget cut to the masked end in
    their masked form, the rest (to n) in full."""
    return masked_end - masked_cut + full_n - full_end


def _bounds(k: ContextKnobs, n_turns: int, ends: Sequence[int]) -> tuple[int, int, int]:
    """forget and masking: the first kept turn, the first kept item, the end of the masked items."""
    first_turn, cut = 0, 0
    if k.forget_after_turns is not None and n_turns > k.forget_after_turns:
        first_turn = n_turns - k.forget_after_turns
        cut = ends[first_turn - 1]
    mask_count = max(0, n_turns - first_turn - k.observation_window)
    mask_end = ends[first_turn + mask_count - 1] if mask_count else cut
    return first_turn, cut, mask_end


def _render(f: _Frame, mem: list[tuple[str, str]], k: ContextKnobs, allow_compaction: bool) -> RenderedContext:
    tail, n = f.tail, f.n
    b_bytes = len(memory_text(mem).encode()) if mem else 0
    _, cut, mask_end = _bounds(k, f.n_turns, f.ends)
    c_bytes = layer_c_bytes(tail.cum_masked[cut], tail.cum_masked[mask_end], tail.cum_full[mask_end], tail.cum_full[n])
    chars = f.a_bytes + b_bytes + c_bytes
    plan = None
    if allow_compaction and chars > k.soft_cap_chars:
        plan = _plan(tail, k, n, f.n_turns, f.ends)
    return _context(f, mem, k, cut, mask_end, (b_bytes, c_bytes), plan)


def _context(
    f: _Frame,
    mem: list[tuple[str, str]],
    k: ContextKnobs,
    cut: int,
    mask_end: int,
    bc_bytes: tuple[int, int],
    plan: CompactionPlan | None,
) -> RenderedContext:
    """The context of frame `f` whose forget cut, masked end and Layer B/C sizes are known; its
    messages are made when first asked for."""
    tail, n = f.tail, f.n
    b_bytes, c_bytes = bc_bytes
    chars = f.a_bytes + b_bytes + c_bytes
    prefix = f.prefix  # snapshot: the builder moves on, this context does not
    shape = Shape(prefix, tuple(mem), tail, cut, mask_end, n, f.compactions, k)
    return RenderedContext(
        chars=chars,
        message_count=f.a_count + (1 if mem else 0) + (n - cut),
        compaction=plan,
        hard_cap_exceeded=chars > k.hard_cap_chars,
        knobs=k,
        layer_bytes={"A": f.a_bytes, "B": b_bytes, "C": c_bytes},
        forgotten=cut,
        dropped_by_fresh=tail.hidden_by_fresh,
        compacted_away=f.compacted_away,
        prefix_inferred=prefix.inferred,
        shape=shape,
        _make_entries=partial(_shape_entries, shape),
        _make_dropped=partial(_shape_dropped, shape),
    )


def _shape_entries(s: Shape) -> list[ContextEntry]:
    """The messages of a built context, from its shape (made when first asked for)."""
    mem = list(s.memory)
    b_text = memory_text(mem) if mem else ""
    return ContextBuilder._entries(s.prefix, s.tail, s.n, s.knobs, mem, b_text, s.cut, s.mask_end)


def _shape_dropped(s: Shape) -> list[ContextEntry]:
    """The messages a built context left out by forget_after_turns (with their reason)."""
    reason = f"dropped by forget_after_turns={s.knobs.forget_after_turns}"
    return [ContextEntry(r.message, "C", r.bytes, reason, r.seq) for r in s.tail.items[: s.cut]]


class Segment(NamedTuple):
    """What a what-if builder's contexts are made of between two of its compactions (see `Splice`):
    its tail object (holding at least a call's items by the time its messages are asked for), the
    ranges compacted so far, and how many items those compactions took away."""

    tail: _Tail
    compactions: tuple[tuple[int, int], ...]
    compacted_away: int


def spliced_context(
    segment: Segment, figures: tuple[int, int, int, int, int], shown: RenderedContext, k: ContextKnobs
) -> RenderedContext:
    """The context a what-if builder following a base builder builds at a call (no compaction: its
    total is within the soft cap), from the figures `Splice.figures` found there: `shown` is the base
    builder's context of that call (its Layer A and memory)."""
    n, n_turns, cut, mask_end, c_bytes = figures
    shape = shown.shape
    assert shape is not None
    a_bytes = shown.layer_bytes["A"]
    mem = list(shape.memory)
    a_count = shown.message_count - (1 if mem else 0) - (shape.n - shown.forgotten)
    tail, compactions, compacted_away = segment
    frame = _Frame(shape.prefix, a_bytes, a_count, tail, n, n_turns, (), compacted_away, compactions)
    return _context(frame, mem, k, cut, mask_end, (shown.layer_bytes["B"], c_bytes), None)


def _plan(tail: _Tail, k: ContextKnobs, n: int, n_turns: int, ends: Sequence[int]) -> CompactionPlan | None:
    first_turn, cut, mask_end = _bounds(k, n_turns, ends)
    compactable = n_turns - first_turn - k.min_tail_turns
    if compactable <= 0:
        return None
    span_end = ends[first_turn + compactable - 1]
    end_idx = span_end - cut  # index into the forgotten body ...
    if end_idx <= 0 or n < end_idx:
        return None
    # ... used on the unforgotten list, as zymi does (docs/context.md#compaction)
    lo, hi = tail.items[0].seq, tail.items[end_idx - 1].seq
    span = ContextBuilder._shown(tail, cut, span_end, mask_end)
    return CompactionPlan((lo, hi), span, _span_bytes(tail, cut, span_end, mask_end, span), compactable)


def _span_bytes(tail: _Tail, cut: int, end: int, mask_end: int, span: list[MessageModel]) -> int:
    """The bytes of items [cut, end) as shown (`span`, those before `mask_end` masked), from the
    running sums (a compaction's span is thousands of messages on a long run); a simulated item is
    counted by its shown text (a placeholder), not by the size estimated for it that the sums hold."""
    mid = max(cut, min(end, mask_end))
    total = layer_c_bytes(tail.cum_masked[cut], tail.cum_masked[mid], tail.cum_full[mid], tail.cum_full[end])
    for i in [i for i in range(cut, end) if tail.items[i].simulated]:
        sums = tail.cum_masked if i < mid else tail.cum_full
        total += message_bytes(span[i - cut]) - (sums[i + 1] - sums[i])
    return total


def rerender(ctx: RenderedContext, knobs: ContextKnobs) -> RenderedContext | None:
    """`ctx`'s builder state rendered under `knobs`, as `build(memory, knobs=knobs)` would have at
    that moment (a soft-cap plan included); None for a context with no builder state (a compaction
    call's own request). O(1): the state is the tail as it was (`Shape`), which later calls only
    append to."""
    shape = ctx.shape
    if shape is None:
        return None
    tail, n = shape.tail, shape.n
    n_turns = bisect.bisect_left(tail.turn_starts, n)
    mem = list(shape.memory)
    a_count = ctx.message_count - (1 if mem else 0) - (n - ctx.forgotten)
    frame = _Frame(
        shape.prefix,
        ctx.layer_bytes["A"],
        a_count,
        tail,
        n,
        n_turns,
        _Ends(tail.turn_ends, n_turns, n),
        ctx.compacted_away,
        shape.compactions,
    )
    return _render(frame, mem, knobs, True)
