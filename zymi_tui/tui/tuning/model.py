"""What the tuning screens show, without widgets or IO: the knob form (validated as typed), the diff
of a re-rendered call against the recorded one, and a stream's curve under the edited knobs."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from zymi_tui.context.builder import ContextEntry, RenderedContext
from zymi_tui.context.knobs import KNOB_NAMES, ContextKnobs, KnobError, make_knobs, parse_set
from zymi_tui.events.messages import message_text
from zymi_tui.replay.calls import CallContext

ADDED, DROPPED, MASKED, UNMASKED, COMPACTED, CHANGED, SAME = (
    "added", "dropped", "masked", "unmasked", "compacted", "changed", "same",
)  # fmt: skip


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
    """A re-rendered call against the recorded one: per message what changed, and the totals."""

    changes: list[EntryChange]
    chars_before: int
    chars_after: int
    messages_before: int
    messages_after: int
    tokens_delta: int  # estimated (o200k) over the changed messages only: like with like, and cheap
    would_compact: bool
    hard_cap_exceeded: bool

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.changes)

    @property
    def chars_delta(self) -> int:
        return self.chars_after - self.chars_before


def _key(e: ContextEntry, index: int) -> tuple[str, int, str]:
    if e.source_seq is None:
        return e.layer, index, e.message.role
    return e.layer, e.source_seq, e.message.role


def _keyed(entries: Sequence[ContextEntry]) -> dict[tuple[str, int, str], ContextEntry]:
    return {_key(e, i): e for i, e in enumerate(entries)}


def diff_contexts(before: RenderedContext, after: RenderedContext) -> CallDiff:
    """Entries matched by (layer, source seq, role); Layer A/B by position."""
    old, new = _keyed(before.entries), _keyed(after.entries)
    dropped_by_forget = {e.source_seq for e in after.dropped}
    changes: list[EntryChange] = []
    tokens_delta = 0
    for key in sorted(set(old) | set(new), key=lambda k: ("ABC".index(k[0]), k[1], k[2])):
        a, b = old.get(key), new.get(key)
        layer, _, role = key
        seq = (a or b).source_seq if (a or b) is not None else None  # type: ignore[union-attr]
        if a is None and b is not None:
            changes.append(EntryChange(ADDED, layer, role, seq, 0, b.bytes, b.reason))
            tokens_delta += b.tokens
        elif b is None and a is not None:
            status = DROPPED if seq in dropped_by_forget else COMPACTED
            reason = "dropped by forget_after_turns" if status == DROPPED else "inside a compacted range"
            if status == DROPPED:
                reason = next((e.reason for e in after.dropped if e.source_seq == seq), reason)
            changes.append(EntryChange(status, layer, role, seq, a.bytes, 0, reason))
            tokens_delta -= a.tokens
        elif a is not None and b is not None:
            if message_text(a.message) == message_text(b.message) and a.bytes == b.bytes:
                status = SAME
            elif b.reason.startswith("masked") and not a.reason.startswith("masked"):
                status = MASKED
            elif a.reason.startswith("masked") and not b.reason.startswith("masked"):
                status = UNMASKED
            else:
                status = CHANGED
            changes.append(EntryChange(status, layer, role, seq, a.bytes, b.bytes, b.reason))
            if status != SAME:
                tokens_delta += b.tokens - a.tokens
    return CallDiff(
        changes,
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


def curve(recorded: Iterable[CallContext], what_if: Iterable[CallContext] | None, *, partial: bool = False) -> Curve:
    """The curve; `partial`: `what_if` is the first calls of a what-if still running."""
    rec_all = list(recorded)
    rec = [c for c in rec_all if not c.is_compaction and not c.hard_cap_failure]
    seqs = [c.sequence for c in rec]
    rec_y = [c.recorded_chars for c in rec]
    rec_marks = _marks(rec_all, seqs)
    inferred = max((c.rendered.layer_bytes.get("A", 0) for c in rec if c.prefix_inferred and c.rendered), default=None)
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
