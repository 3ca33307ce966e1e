"""What a build hands out: the rendered context of one call (its entries, layers, sizes, compaction
plan) and the few types that describe it, with zymi's compaction prompt and header."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.layer_c import Tail
from zymi_tui.context.masking import (
    compaction_input,
    message_bytes,
)
from zymi_tui.events.messages import (
    MessageModel,
    SystemMessage,
    UserMessage,
    to_wire,
)

COMPACTION_PROMPT = (
    "You are compressing a sequence of masked observations from an autonomous agent's history. "
    "Each entry shows what tool was called and whether it succeeded. Produce a single paragraph "
    "summarizing: (a) what the agent accomplished in this span, (b) any errors or dead ends, "
    "(c) any decisions the agent committed to. Do NOT preserve individual tool call details "
    "— the summary replaces them entirely."
)
COMPACTED_HEADER = "[compacted history]\n"


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
            return size_tokens(self.bytes)
        return estimate_message_tokens(self.message)


def size_tokens(nbytes: int) -> int:
    """The tokens of a message known only by its size (no text to count): ~4 bytes per token."""
    return max(1, round(nbytes / 4))


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
    tail: Tail
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
