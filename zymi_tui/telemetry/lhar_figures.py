"""What an LHAR entry tells of its call's context: the tokens and count of each composition category,
the tool calls of its messages, and each message's JSON for the request body.

A context built from a `Shape` (`ShownFigures`) is figured as its Layer A and memory messages (kept by
value: a few per agent and snapshot) and its Layer C items, whose figures are made once per item shown
alike and summed as the step's window moves forward (telemetry/shown_items.py): a call costs what
changed since the step's last call, not its whole context. Any other (a compaction call's own request)
is figured from its entries (`composition`), each message's figures kept by `MessageCache`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from zymi_tui.context.layer_c import Item
from zymi_tui.context.masking import memory_block
from zymi_tui.context.rendered import ContextEntry, Prefix, Shape, size_tokens
from zymi_tui.context.splice import memory_entry, prefix_entries
from zymi_tui.context.tokens import estimate_message_tokens
from zymi_tui.events.json_text import json_text
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
    to_wire,
)
from zymi_tui.telemetry.lhar_body import BodyText
from zymi_tui.telemetry.lhar_text import items_text, value_text
from zymi_tui.telemetry.shown_items import HEADS_KEPT, ShownItems, shown

COMPOSITION = (
    "system_prompt", "tool_definitions", "system_injections", "user_text", "assistant_text", "tool_calls",
    "tool_results",
)  # fmt: skip
CATEGORY = {c: i for i, c in enumerate(COMPOSITION)}  # a category's place in `COMPOSITION`
SYSTEM_PROMPT, TOOL_DEFINITIONS = CATEGORY["system_prompt"], CATEGORY["tool_definitions"]


def message_category(m: MessageModel) -> str:
    """The composition category of a message anywhere but first in Layer A (the system prompt)."""
    if isinstance(m, SystemMessage):
        return "system_injections"
    if isinstance(m, UserMessage) or m.role == "user_multimodal":
        return "user_text"
    if isinstance(m, ToolResultMessage):
        return "tool_results"
    if isinstance(m, AssistantMessage) and m.tool_calls and not m.content:
        return "tool_calls"
    return "assistant_text"


def message_tool_calls(message: MessageModel) -> list[dict[str, Any]]:
    """context-lens's `tool_calls` items of one message (an assistant message's calls)."""
    calls: list[dict[str, Any]] = []
    if isinstance(message, AssistantMessage):
        for c in message.tool_calls:
            try:
                args: Any = json.loads(c.arguments)
            except ValueError:
                args = c.arguments
            calls.append(
                {"name": c.name, "call_id": c.id, "arguments": args if isinstance(args, dict | str) else c.arguments}
            )
    return calls


class Figures(NamedTuple):
    """What an entry needs of its message, made once per message of a step."""

    tokens: int  # estimated (the tokenizer of the context figures)
    category: str  # `message_category`
    tool_calls: str  # its `message_tool_calls` as the items of a JSON list ("" for none)
    wire: bytes  # its OpenAI wire form's JSON, UTF-8 (b"" when no request body is written)


def message_figures(message: MessageModel, *, wire: bool = False) -> Figures:
    calls = message_tool_calls(message)
    return Figures(
        estimate_message_tokens(message),
        message_category(message),
        items_text(calls) if calls else "",
        json_text(to_wire(message)).encode() if wire else b"",
    )


class Counted(NamedTuple):
    """A context's figures: tokens and messages by category (in `COMPOSITION` order), the tool calls
    of its messages (each one's JSON list items, in order), each message's JSON (None: no body)."""

    tokens: list[int]
    counts: list[int]
    calls: list[str]
    wires: list[bytes] | None


def counted(entries: Sequence[ContextEntry], figures: Sequence[Figures], *, wire: bool) -> Counted:
    """The figures of a context's `entries`, each message's figures `figures`. Tokens are estimates:
    each message's from its figures; a simulated entry, or an inferred Layer A one, is sized from its
    bytes (`ContextEntry.tokens`); the first entry of Layer A, a system message, is the system prompt."""
    tokens, counts = [0] * len(COMPOSITION), [0] * len(COMPOSITION)
    calls: list[str] = []
    first = True
    for e, f in zip(entries, figures, strict=True):
        n = e.tokens if e.simulated or (e.layer == "A" and e.reason.startswith("inferred")) else f.tokens
        cat = CATEGORY[f.category]
        if first:
            first = False
            if e.layer == "A" and isinstance(e.message, SystemMessage):
                cat = SYSTEM_PROMPT
        tokens[cat] += n
        counts[cat] += 1
        if f.tool_calls:
            calls.append(f.tool_calls)
    return Counted(tokens, counts, calls, [f.wire for f in figures] if wire else None)


COMPOSED_KEPT = 1 << 12  # composition texts kept by their figures (a store of many alike runs has a few)
_composed: dict[tuple[int, ...], str] = {}


def composition(c: Counted, body: BodyText) -> tuple[str, dict[str, int], str]:
    """context-lens's composition of a context figured `c` (the items of its JSON list), tool
    definitions included, the tokens of each category, and the tool calls of its messages (the items of
    a JSON list). The text is kept by its figures (`COMPOSED_KEPT`)."""
    tokens, counts = list(c.tokens), list(c.counts)
    if body.tools_count:
        tokens[TOOL_DEFINITIONS], counts[TOOL_DEFINITIONS] = body.tools_tokens, body.tools_count
    key = (*tokens, *counts)
    comp = _composed.get(key)
    if comp is None:
        total = sum(tokens) or 1
        comp = ", ".join(
            f'{{"category": "{name}", "tokens": {tokens[i]}, "pct": {value_text(round(100 * tokens[i] / total, 2))}, '
            f'"count": {counts[i]}}}'
            for i, name in enumerate(COMPOSITION)
            if counts[i]
        )
        if len(_composed) >= COMPOSED_KEPT:
            _composed.clear()
        _composed[key] = comp
    return comp, dict(zip(COMPOSITION, tokens, strict=True)), ", ".join(c.calls)


class ItemTally:
    """The running figures of a step's window of Layer C items (`shown_items.Tally` of `Figures`): the
    tokens and count of each category, and each item's tool calls and JSON, in the window's order."""

    __slots__ = ("calls", "counts", "tokens", "wires")

    def __init__(self) -> None:
        self.tokens, self.counts = [0] * len(COMPOSITION), [0] * len(COMPOSITION)
        self.calls: list[str] = []  # each item's tool calls ("" for none)
        self.wires: list[bytes] = []

    def add(self, values: Sequence[Figures]) -> None:
        tokens, counts = self.tokens, self.counts
        for f in values:
            cat = CATEGORY[f.category]
            tokens[cat] += f.tokens
            counts[cat] += 1
        self.calls += [f.tool_calls for f in values]
        self.wires += [f.wire for f in values]

    def remove(self, values: Sequence[Figures]) -> None:
        tokens, counts = self.tokens, self.counts
        for f in values:
            cat = CATEGORY[f.category]
            tokens[cat] -= f.tokens
            counts[cat] -= 1
        del self.calls[: len(values)], self.wires[: len(values)]

    def replace(self, places: Sequence[int], was: Sequence[Figures], now: Sequence[Figures]) -> None:
        tokens, counts, calls, wires = self.tokens, self.counts, self.calls, self.wires
        for at, old, f in zip(places, was, now, strict=True):
            cat, before = CATEGORY[f.category], CATEGORY[old.category]
            tokens[before] -= old.tokens
            counts[before] -= 1
            tokens[cat] += f.tokens
            counts[cat] += 1
            calls[at], wires[at] = f.tool_calls, f.wire


class ShownFigures:
    """The figures of each call's context from its `Shape`, per step stream: Layer A and the memory
    snapshot figured once per value, Layer C as a window of items moved forward (`ShownItems`)."""

    def __init__(self, *, wire: bool) -> None:
        self.wire = wire
        self.items: ShownItems[Figures] = ShownItems(self._item_figures, ItemTally)
        self.heads: dict[tuple[Prefix, tuple[tuple[str, str], ...]], Counted] = {}
        # Layer A, memory and summary messages' figures, by value (made anew by the builds)
        self.messages: dict[MessageModel, Figures] = {}

    def _item_figures(self, item: Item, masked: bool) -> Figures:
        if item.simulated:  # no text: sized from its bytes (`ContextEntry.tokens`)
            f = message_figures(shown(item, masked), wire=self.wire)
            return f._replace(tokens=size_tokens(item.masked_bytes if masked else item.bytes))
        if item.note is not None:  # a summary: made anew with each tail a compaction makes, so known by value
            return self._message(shown(item, masked))
        return message_figures(shown(item, masked), wire=self.wire)

    def _head(self, prefix: Prefix, memory: tuple[tuple[str, str], ...]) -> Counted:
        """The figures of Layer A and the memory snapshot's message (`splice.context_entries`'s first)."""
        got = self.heads.get((prefix, memory))
        if got is None:
            entries = prefix_entries(prefix)
            if memory:
                entries.append(memory_entry(list(memory), memory_block(memory).text))
            figures = [self._message(e.message) for e in entries]
            if len(self.heads) >= HEADS_KEPT:
                self.heads.clear()
            got = self.heads[(prefix, memory)] = counted(entries, figures, wire=self.wire)
        return got

    def _message(self, m: MessageModel) -> Figures:
        got = self.messages.get(m)
        if got is None:
            if len(self.messages) >= HEADS_KEPT:
                self.messages.clear()
            got = self.messages[m] = message_figures(m, wire=self.wire)
        return got

    def figures(self, stream: str, shape: Shape) -> Counted:
        """The figures of the context `shape` says where to find, in a call of step stream `stream`."""
        head = self._head(shape.prefix, shape.memory)
        w = self.items.window(stream, shape.tail, shape.mask_end, shape.n, shape.cut)
        tally = w.tally
        assert isinstance(tally, ItemTally)
        calls = [*head.calls, *filter(None, tally.calls)]
        wires = head.wires + tally.wires if head.wires is not None else None
        return Counted(
            [a + b for a, b in zip(head.tokens, tally.tokens, strict=True)],
            [a + b for a, b in zip(head.counts, tally.counts, strict=True)],
            calls,
            wires,
        )

    def forget(self, stream: str) -> None:
        self.items.forget(stream)
