"""What the tuning screens show, without widgets or IO: the knob form (validated as typed), the diff
of a re-rendered call against the recorded one, and a stream's curve under the edited knobs."""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from zymi_tui.context.knobs import KNOB_NAMES, ContextKnobs, KnobError, make_knobs, parse_set
from zymi_tui.context.rendered import ContextEntry, RenderedContext
from zymi_tui.events.messages import message_text
from zymi_tui.replay.call_context import CallContext

ADDED, DROPPED, MASKED, UNMASKED, COMPACTED, CHANGED = "added", "dropped", "masked", "unmasked", "compacted", "changed"
IN_RANGE = "inside a compacted range"  # the reason of a compacted message


def knob_text(knobs: ContextKnobs) -> dict[str, str]:
    return {k: "off" if (v := getattr(knobs, k)) is None else str(v) for k in KNOB_NAMES}


@dataclass
class KnobForm:
    """The five knob fields as typed. `knobs` is the last valid set; `errors` the fields in error."""

    recorded: ContextKnobs
    texts: dict[str, str] = field(default_factory=dict)
    knobs: ContextKnobs | None = None
    errors: dict[str, str] = field(default_factory=dict)
    history: list[ContextKnobs] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.load(self.recorded, remember=False)

    def load(self, knobs: ContextKnobs, *, remember: bool = True) -> None:
        """Set every field from a profile (a valid set by construction)."""
        if remember and self.knobs is not None and self.knobs != knobs:
            self.history.append(self.knobs)
        self.texts, self.knobs, self.errors = knob_text(knobs), knobs, {}

    def set(self, name: str, text: str) -> ContextKnobs | None:
        """Change one field; returns the new valid knobs, or None (and `errors` says why)."""
        self.texts[name] = text
        values: dict[str, int | None] = {}
        self.errors = {}
        for key in KNOB_NAMES:
            try:
                _, values[key] = parse_set(f"{key}={self.texts[key]}")
            except KnobError as e:
                self.errors[key] = str(e).removeprefix("--set ")
        if self.errors:
            return None
        try:
            knobs = make_knobs(dict(values), "knobs")
        except KnobError as e:
            message = str(e).removeprefix("knobs: ")
            culprit = next((k for k in KNOB_NAMES if message.startswith(f"{k}=")), "hard_cap_chars")
            self.errors[culprit] = message
            return None
        if knobs != self.knobs:
            if self.knobs is not None:
                self.history.append(self.knobs)
            self.knobs = knobs
        return knobs

    def undo(self) -> ContextKnobs:
        previous = self.history.pop() if self.history else self.recorded
        self.texts, self.knobs, self.errors = knob_text(previous), previous, {}
        return previous

    def reset(self) -> ContextKnobs:
        self.load(self.recorded)
        return self.recorded

    @property
    def edited(self) -> bool:
        return self.knobs is not None and self.knobs != self.recorded


@dataclass(frozen=True)
class EntryChange:
    status: str
    layer: str
    role: str
    source_seq: int | None
    bytes_before: int
    bytes_after: int
    reason: str

    @property
    def bytes_delta(self) -> int:
        return self.bytes_after - self.bytes_before


@dataclass
class CallDiff:
    """A re-rendered call against the recorded one: each message that changed (in context order), how
    many did not, and the totals."""

    changes: list[EntryChange]
    unchanged: int
    chars_before: int
    chars_after: int
    messages_before: int
    messages_after: int
    tokens_delta: int  # estimated (o200k) over the changed messages only: like with like, and cheap
    would_compact: bool
    hard_cap_exceeded: bool

    def count(self, status: str) -> int:
        return self.counts.get(status, 0)

    @cached_property
    def counts(self) -> dict[str, int]:
        """Changes by status, counted once (the summary asks for five of them on every draw)."""
        return dict(Counter(c.status for c in self.changes))

    @property
    def chars_delta(self) -> int:
        return self.chars_after - self.chars_before


Key = tuple[str, int, str]


def _key(e: ContextEntry, index: int) -> Key:
    if e.source_seq is None:
        return e.layer, index, e.message.role
    return e.layer, e.source_seq, e.message.role


def _keyed(entries: Sequence[ContextEntry]) -> dict[Key, ContextEntry]:
    return {_key(e, i): e for i, e in enumerate(entries)}


def _order(k: Key) -> tuple[int, int, str]:
    return "ABC".index(k[0]), k[1], k[2]


class _Recorded:
    """The recorded side of the diffs, keyed and ordered once: every edit diffs against the same call.
    What a diff makes of a recorded message that is gone (compacted, or dropped by forget, for each
    reason) is kept too, with its tokens: a long stream's recorded call has thousands of messages, and
    an edit changes few of them."""

    def __init__(self, context: RenderedContext | None = None) -> None:
        self.context = context
        self.keyed: dict[Key, ContextEntry] = {} if context is None else _keyed(context.entries)
        self.order: list[Key] = sorted(self.keyed, key=_order)
        self.ranks = [_order(k) for k in self.order]
        self.tokens: dict[Key, int] = {}
        self.changes: dict[tuple[Key, str, str, int], EntryChange] = {}
        # a recorded message the what-if does not have: its source seq, tokens, and its change when
        # compacted (most of a long call's messages after a compaction: looked up in one step)
        self.gone: dict[Key, tuple[int | None, int, EntryChange]] = {}

    def merged_order(self, new: dict[Key, ContextEntry]) -> list[Key]:
        """The recorded keys and the what-if's others, in `_order` (what `sorted` of their union gives)."""
        extra = [k for k in new if k not in self.keyed]
        if not extra:
            return self.order
        order = list(self.order)
        for key in sorted(extra, key=_order, reverse=True):  # from the last, so earlier positions hold
            order.insert(bisect.bisect_left(self.ranks, _order(key)), key)
        return order

    def token_count(self, key: Key) -> int:
        hit = self.tokens.get(key)
        if hit is None:
            hit = self.tokens[key] = _tokens(self.keyed[key])
        return hit

    def gone_entry(self, key: Key) -> tuple[int | None, int, EntryChange]:
        hit = self.gone[key] = (
            self.keyed[key].source_seq,
            self.token_count(key),
            self.change(key, COMPACTED, IN_RANGE, 0),
        )
        return hit

    def change(self, key: Key, status: str, reason: str, bytes_after: int) -> EntryChange:
        """The change of recorded message `key` (one object per status, reason and size after)."""
        hit = self.changes.get((key, status, reason, bytes_after))
        if hit is None:
            a = self.keyed[key]
            layer, _, role = key
            hit = EntryChange(status, layer, role, a.source_seq, a.bytes, bytes_after, reason)
            self.changes[(key, status, reason, bytes_after)] = hit
        return hit


_recorded = _Recorded()
_recorded_lock = threading.Lock()
_tokens_by_message: dict[int, tuple[object, int]] = {}


def _recorded_side(context: RenderedContext) -> _Recorded:
    global _recorded
    with _recorded_lock:
        if _recorded.context is not context:
            _recorded = _Recorded(context)
        return _recorded


def prepare_recorded(context: RenderedContext) -> None:
    """Key recorded call `context` and estimate its messages' tokens ahead of the first diff against it
    (on a long stream's last call, thousands of them: more than an edit's budget)."""
    rec = _recorded_side(context)
    for key in rec.keyed:
        rec.token_count(key)


def _tokens(e: ContextEntry) -> int:
    """`e.tokens`, estimated once per message object (the re-rendered calls share their messages)."""
    if e.simulated or e.layer == "A":
        return e.tokens
    hit = _tokens_by_message.get(id(e.message))
    if hit is None or hit[0] is not e.message:
        if len(_tokens_by_message) > 100_000:
            _tokens_by_message.clear()
        hit = _tokens_by_message[id(e.message)] = (e.message, e.tokens)
    return hit[1]


def diff_contexts(before: RenderedContext, after: RenderedContext) -> CallDiff:
    """Entries matched by (layer, source seq, role); Layer A/B by position. The recorded side is keyed
    once (`_Recorded`), a message object shared by both sides is the same message, and token estimates
    are computed only for changed messages, once per message. A message that did not change is only
    counted: a long call has thousands, and their reasons name the knob values, so a change object for
    each was made again on every new value."""
    rec = _recorded_side(before)
    old = rec.keyed
    new = _keyed(after.entries)
    dropped_by_forget: dict[int | None, str] = {}
    for e in after.dropped:
        dropped_by_forget.setdefault(e.source_seq, e.reason)
    changes: list[EntryChange] = []
    unchanged = tokens_delta = 0
    gone = rec.gone
    for key in rec.merged_order(new):
        b = new.get(key)
        if b is None:  # a recorded message (every key is the recorded side's or the what-if's)
            hit = gone.get(key) or rec.gone_entry(key)
            seq = hit[0]
            changes.append(rec.change(key, DROPPED, dropped_by_forget[seq], 0) if seq in dropped_by_forget else hit[2])
            tokens_delta -= hit[1]
            continue
        a = old.get(key)
        if a is not None:
            if (a.message is b.message or message_text(a.message) == message_text(b.message)) and a.bytes == b.bytes:
                unchanged += 1
                continue
            if b.reason.startswith("masked") and not a.reason.startswith("masked"):
                status = MASKED
            elif a.reason.startswith("masked") and not b.reason.startswith("masked"):
                status = UNMASKED
            else:
                status = CHANGED
            changes.append(EntryChange(status, key[0], key[2], a.source_seq, a.bytes, b.bytes, b.reason))
            tokens_delta += _tokens(b) - rec.token_count(key)
        else:
            changes.append(EntryChange(ADDED, key[0], key[2], b.source_seq, 0, b.bytes, b.reason))
            tokens_delta += _tokens(b)
    return CallDiff(
        changes,
        unchanged,
        before.chars,
        after.chars,
        before.message_count,
        after.message_count,
        tokens_delta,
        after.compaction is not None,
        after.hard_cap_exceeded,
    )


@dataclass
class Curve:
    """One stream's agent calls: x = call index, y = chars, recorded and under the edited knobs."""

    sequences: list[int]
    recorded: list[int]
    what_if: list[int | None]  # None: this call would fail the hard cap
    compactions_recorded: list[float]  # x positions (between calls) of compaction calls
    compactions_what_if: list[float]
    simulated: int = 0
    inferred_prefix: int | None = None  # no project: the largest Layer A inferred for these calls (bytes)
    known: int | None = None  # a what-if still running: its first `known` calls are computed (None: all)


@dataclass
class _RecordedCurve:
    """The recorded side of a curve (kept for the last recorded list: every draw of an editor has it)."""

    calls: Sequence[CallContext] | None = None
    size: int = 0
    seqs: list[int] = field(default_factory=list)
    ys: list[int] = field(default_factory=list)
    marks: list[float] = field(default_factory=list)
    inferred: int | None = None

    def of(self, recorded: Sequence[CallContext]) -> _RecordedCurve:
        if self.calls is not recorded or self.size != len(recorded):
            rec = [c for c in recorded if not c.is_compaction and not c.hard_cap_failure]
            self.calls, self.size = recorded, len(recorded)
            self.seqs = [c.sequence for c in rec]
            self.ys = [c.recorded_chars for c in rec]
            self.marks = _marks(recorded, self.seqs)
            self.inferred = max(
                (c.rendered.layer_bytes.get("A", 0) for c in rec if c.prefix_inferred and c.rendered), default=None
            )
        return self


_recorded_curve = _RecordedCurve()


def curve(recorded: Iterable[CallContext], what_if: Iterable[CallContext] | None, *, partial: bool = False) -> Curve:
    """The curve; `partial`: `what_if` is the first calls of a what-if still running."""
    side = _recorded_curve.of(recorded if isinstance(recorded, list) else list(recorded))
    seqs, rec_y, rec_marks, inferred = side.seqs, side.ys, side.marks, side.inferred  # shared: never changed
    if what_if is None:
        return Curve(seqs, rec_y, list[int | None](rec_y), rec_marks, rec_marks, inferred_prefix=inferred)
    wi = list(what_if)
    by_seq = {c.sequence: c for c in wi if not c.is_compaction and not c.hard_cap_failure}
    ys: list[int | None] = []
    for s in seqs:
        c = by_seq.get(s)
        r = c.rendered if c is not None else None
        ys.append(None if r is None or r.hard_cap_exceeded else r.chars)
    known = None
    if partial:
        last = max((c.sequence for c in wi), default=-1)
        known = bisect.bisect_right(seqs, last)
    return Curve(seqs, rec_y, ys, rec_marks, _marks(wi, seqs), sum(c.simulated for c in wi), inferred, known)


def _marks(calls: Iterable[CallContext], seqs: list[int]) -> list[float]:
    return [bisect.bisect_left(seqs, c.sequence) + 0.5 for c in calls if c.is_compaction]
