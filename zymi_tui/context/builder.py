"""zymi 0.9.3's ContextBuilder (context_builder.rs), incremental and re-renderable.

Layer A (system prompt, task), Layer B (`[memory]` snapshot), Layer C (the step stream's
messages: ContextCompacted ranges suppressed, `context.mode: fresh` filter), then forget,
observation masking, the soft-cap compaction plan and the hard-cap check, with the rules of
docs/context.md (which every recorded call confirms).

Incremental: `add()` keeps Layer C as a list with running byte sums and turn boundaries, so
`build()` computes the totals in O(1) and the message list only when it is asked for.
A ContextCompacted event (rare) re-derives Layer C from the stored items with bisection (compacted_tail.py).
"""

from __future__ import annotations

import copy
import dataclasses
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from zymi_tui.context.cold_items import RawItems, RawView
from zymi_tui.context.compacted_tail import Compaction, compacted_tail
from zymi_tui.context.event_items import Converted, convert
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.layer_c import (
    HOT_BYTES,
    HOT_ITEMS,
    TOOL,
    Item,
    NotedItem,
    Tail,
    TextSource,
    kind_of,
    widened,
)
from zymi_tui.context.masking import (
    message_bytes,
)
from zymi_tui.context.rendered import CompactionPlan, Prefix, RenderedContext
from zymi_tui.context.seen import SeenBesideItems, SeenEvents
from zymi_tui.context.splice import Frame, compaction_plan, render_frame
from zymi_tui.events.kinds import ContextCompacted
from zymi_tui.events.messages import (
    MessageModel,
)
from zymi_tui.events.replay_view import ReplayEvent

SEQ = "I"  # sequences as 4-byte machine integers (a builder holds one or two per event); wider when one is not


def _joined(seqs: array[int], more: array[int]) -> array[int]:
    """`seqs` followed by `more` (in place when both are of one width)."""
    if seqs.typecode != more.typecode:
        seqs, more = array("q", seqs), array("q", more)
    seqs += more
    return seqs


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
    tail: Tail
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
        texts: TextSource | None = None,
    ) -> None:
        """`texts`: where an old item's text is read back from when a build shows it (a replay of a
        store); None: items keep their texts (old tool results packed), see `Item`."""
        self.knobs = knobs
        self.texts = texts
        self.prefix = prefix
        self._cutoff = fresh_cutoff_ns
        self._follow = follow_recorded_compactions
        self._fed = 0  # message bytes appended (see HOT_BYTES)
        # machine integers (8 bytes each, not int objects): one per event of a stream of a million
        self._raw_seqs = array(SEQ)
        self._raw = RawItems(texts, self._raw_seqs)  # (old items hidden by the fresh filter as columns)
        self._raw_ts = array("q")  # each item's timestamp (ns)
        # events seen, in order (a replay may skip kinds zymi ignores); those that made an item only
        # counted while every item is one an event made (`_events_seen` makes them whole when asked)
        self._seen: SeenEvents | SeenBesideItems = SeenBesideItems() if follow_recorded_compactions else SeenEvents()
        self._monotone = True
        self._last_ts = -1
        self._compactions: list[Compaction] = []
        self._max_hi = -1
        self._tail = Tail()
        # Layer C without a fresh cutoff, kept up to date while a cutoff is set (None otherwise, or
        # not known): a step run whose Layer A is inferred tries the tail without, then with its
        # cutoff, at every run of a long stream; recomputing the whole history each time was quadratic
        self._uncut_tail: Tail | None = None
        # whether the tail without a cutoff holds exactly `_raw`'s items (no compaction, no copy): it is
        # then made a view of them when a cutoff is set (`RawView`), so that old items can be made cold
        self._aligned = True
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
                self._uncut_tail = uncut = self._tail
                items, n = uncut.items, len(self._raw)
                if self._aligned and self.texts is not None and isinstance(items, list) and len(items) == n:
                    uncut.items = RawView(self._raw, n)
            self._tail = self._compute_tail(fresh_cutoff_ns)
        self._cutoff = fresh_cutoff_ns

    def add(self, ev: ReplayEvent, converted: Converted | None = None) -> None:
        """Any event of the step stream, in sequence order (kinds zymi skips are only timed).
        `converted`: messages already converted for these events (shared by re-runs of one stream)."""
        ts, raw = convert(ev) if converted is None else converted.get(ev)
        seq = ev.sequence
        kind = ev.kind
        seen = self._seen
        if isinstance(seen, SeenEvents):
            seen.add(seq, ts)
        elif raw is not None and not isinstance(kind, ContextCompacted) and (self._follow or ev.source != "compaction"):
            seen.since += 1  # (its item is appended below)
        elif not seen.other(seq, ts):
            self._events_seen().add(seq, ts)
        if ts < self._last_ts:
            self._monotone = False
        self._last_ts = ts
        self.last_seq = seq
        self.last_was_compaction = isinstance(kind, ContextCompacted)
        if isinstance(kind, ContextCompacted):
            lo, hi = kind.replaces_seq_range
            reply, reply_seq = self._pending_reply or (None, None)
            self.recorded.append(RecordedCompaction(seq, lo, hi, kind.summary, kind.bytes_saved, reply, reply_seq))
            self._pending_reply = None
            if self._follow:
                self._add_compaction(Compaction(lo, hi, kind.summary))
            return
        if raw is None:
            return
        if ev.source == "compaction" and not self._follow:
            self._pending_reply = (raw.message, seq)  # what-if decides whether this reply exists
            return
        self._append_raw(raw, ts)

    def _append_raw(self, raw: Item, ts: int) -> None:
        self._raw.append(raw)
        try:
            self._raw_seqs.append(raw.seq)
        except OverflowError:
            self._raw.seqs = self._raw_seqs = widened(self._raw_seqs, [raw.seq])
        self._raw_ts.append(ts)
        self._fed += raw.bytes
        n = len(self._raw_ts)  # (as many as the items)
        if n > HOT_ITEMS and (self.texts is not None or self._fed > HOT_BYTES):  # see Item
            old = self._raw.at(n - HOT_ITEMS - 1)
            hidden = (self._cutoff is not None and self._raw_ts[-HOT_ITEMS - 1] < self._cutoff) or self._suppressed(
                old.seq
            )
            old.pack(self.texts, hidden=hidden)
            cutoff, raw_items, stamps = self._cutoff, self._raw, self._raw_ts
            if hidden and cutoff is not None and self.texts is not None and not self._compactions:
                # the old items the fresh filter hides kept as columns (`RawItems`), oldest first
                while raw_items.cold < n - HOT_ITEMS and stamps[raw_items.cold] < cutoff:
                    raw_items.evict()
        if self._suppressed(raw.seq):
            return
        if self._cutoff is None or ts >= self._cutoff:
            self._tail.append(raw)
            if self._cutoff is None and self._aligned and self._tail.items[-1] is not raw:
                self._aligned = False  # (a copy masked for its turn here)
        if self._uncut_tail is not None:
            self._uncut_tail.append(raw)

    def _suppressed(self, seq: int) -> bool:
        return seq <= self._max_hi and any(c.lo <= seq <= c.hi for c in self._compactions)

    def _add_compaction(self, c: Compaction) -> None:
        self._compactions.append(c)
        self._aligned = False
        self._max_hi = max(self._max_hi, c.hi)
        self._uncut_tail = None
        self._tail = self._compute_tail(self._cutoff)

    def _uncut(self) -> Tail:
        """Layer C without the fresh cutoff (the current tail when there is none)."""
        if self._cutoff is None:
            return self._tail
        if self._uncut_tail is None:
            self._uncut_tail = self._compute_tail(None)
            self._aligned = False  # (its old items made again: not `_raw`'s own)
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
        return self._events_seen().ts_at(seq)

    def _events_seen(self) -> SeenEvents:
        """Every event seen (made whole from the items' figures once asked for)."""
        seen = self._seen
        if isinstance(seen, SeenBesideItems):
            seen = self._seen = seen.events(self._raw_seqs, self._raw_ts)
        return seen

    def _compute_tail(self, cutoff: int | None) -> Tail:
        raw, seqs, stamps = self._raw, self._raw_seqs, self._raw_ts
        return compacted_tail(self._compactions, raw, seqs, stamps, self._visible, cutoff, self._monotone)

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
        frame = Frame(
            self.prefix,
            *self._layer_a(),
            tail,
            n,
            len(tail.turn_starts),
            tail.turn_ends,
            len(self._raw_ts) - (n - tail.summaries) - tail.hidden_by_fresh,
            tuple((c.lo, c.hi) for c in self._compactions),
        )
        return render_frame(frame, list(memory), knobs or self.knobs, allow_compaction)

    def plan_compaction(self, knobs: ContextKnobs | None = None) -> CompactionPlan | None:
        """The compaction zymi would make now if the soft cap were exceeded (None: too few turns)."""
        tail = self._tail
        n_turns = len(tail.turn_starts)
        return compaction_plan(tail, knobs or self.knobs, len(tail.items), n_turns, tail.turn_ends)

    def clone(self) -> ContextBuilder:
        """An independent copy of this builder's state (the items themselves are shared: they are only
        appended, and their masked forms depend on their turn's head alone): a what-if can go on from
        here under other knobs while this builder stays as it is."""
        other = copy.copy(self)
        other._raw_seqs, other._raw_ts = self._raw_seqs[:], self._raw_ts[:]
        other._raw = self._raw.copy()
        other._raw.seqs = other._raw_seqs
        other._seen = self._events_seen().copy()
        other._compactions = list(self._compactions)
        other._tail = self._tail.clone()
        if isinstance(other._tail.items, RawView):  # (a view of this builder's items: of its own now)
            other._tail.items.raw = other._raw
        other._uncut_tail = None  # made again when needed
        other.recorded = [dataclasses.replace(rc) for rc in self.recorded]
        return other

    def mark(self) -> BuildMark:
        """This builder's state now (see `BuildMark`)."""
        return BuildMark(
            len(self._raw), len(self._events_seen()), len(self.recorded), self._tail, len(self._tail.items),
            self.last_seq, self._last_ts, self._monotone, self.last_was_compaction, self._pending_reply,
            self.prefix, self._cutoff,
        )  # fmt: skip

    @property
    def tail(self) -> Tail:
        """Layer C before forget and masking (appended to as events come; replaced by a compaction)."""
        return self._tail

    def can_follow(self, tail: Tail, index: int) -> bool:
        """Whether this builder, just compacted, can go on with `tail`'s items from `index` as `follow`
        appends them: the first is not inside a compacted range, and is not a tool result (which would
        join this builder's last turn, not the turn it joins in `tail`)."""
        if index >= len(tail.items):
            return True
        first = tail.items[index]
        return first.seq > self._max_hi and first.kind != TOOL

    def follow(self, base: ContextBuilder, since: BuildMark | None, now: BuildMark) -> bool:
        """Feed this what-if builder what `base` (a what-if builder of the same step stream that never
        compacts, no fresh cutoff) was fed from `since` (None: its start; this builder was brought
        there before) to `now`, as `add` would have, without the events: the same items appended in
        the same turns (after a compaction, as long as `can_follow` said so), the same recorded
        compactions (copies: this builder marks its own as used). False, and nothing done, if an item
        would fall inside a compacted range (none can: every range ends at an item already seen)."""
        r0, s0, c0, n0 = (since.raw, since.seen, since.recorded, since.n) if since else (0, 0, 0, 0)
        seen = self._events_seen()  # (before items no event of this builder made are appended)
        items = now.tail.items
        if n0 < now.n and items[n0].seq <= self._max_hi:
            return False
        self._raw += base._raw[r0 : now.raw]
        self._raw.seqs = self._raw_seqs = _joined(self._raw_seqs, base._raw_seqs[r0 : now.raw])
        self._aligned = False  # (not checked item by item here)
        self._raw_ts += base._raw_ts[r0 : now.raw]
        seen.extend(base._events_seen(), s0, now.seen)
        self.recorded += [dataclasses.replace(rc) for rc in base.recorded[c0 : now.recorded]]
        self._tail.extend(now.tail, n0, now.n)
        self._uncut_tail = None
        self.last_seq, self._last_ts, self._monotone = now.last_seq, now.last_ts, now.monotone
        self.last_was_compaction, self._pending_reply = now.last_was_compaction, now.pending_reply
        self.prefix = now.prefix
        return True

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
        self._events_seen()  # (an item no event made)
        if reply is not None:
            seq = self.last_seq if reply_seq is None else reply_seq
            ts = self._ts_at(seq) or self._last_ts
            if simulated and estimated_bytes is not None:
                note = "simulated compaction reply (size estimated)"
                raw: Item = NotedItem(seq, reply, estimated_bytes, kind_of(reply), note, simulated=True)
            else:
                raw = Item(seq, reply, message_bytes(reply), kind_of(reply))
            self._append_raw(raw, ts)
        lo, hi = plan.replaces_seq_range
        self._add_compaction(Compaction(lo, hi, summary, simulated, estimated_bytes))

    def take_recorded(self, seq_range: tuple[int, int]) -> RecordedCompaction | None:
        """An unused recorded compaction with this range, marked used."""
        for rc in self.recorded:
            if not rc.used and (rc.lo, rc.hi) == seq_range:
                rc.used = True
                return rc
        return None
