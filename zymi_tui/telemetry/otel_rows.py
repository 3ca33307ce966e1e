"""What a `chat` span takes from its replayed call (`CallContext`): the request body's settings, the
prompts sent and our context figures, as `CallFacts`, made by `RowFacts` where the replay runs.

The trace builder (otel_spans.py) makes the span of these facts and the call's own events. The facts of
a call carry its input messages as their texts (`JsonArrayText`), or, for a builder in another process
(commands/otel_writer.py), as numbers (`Numbered`): a message's texts are made there once, from the
store's event it is (a reference: its step stream and sequence) or from the text sent (a masked form, a
summary, a compaction request's message), and a step's next calls name them by number again."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from zymi_tui.context.layer_c import Item
from zymi_tui.context.texts import StoreTexts
from zymi_tui.events.messages import MessageModel, SystemMessage
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.message_cache import MessageCache
from zymi_tui.telemetry.otel_content import (
    as_json,
    input_messages,
    instruction_parts,
    message_json,
    split_messages,
    tool_definitions,
)
from zymi_tui.telemetry.otel_inputs import ShownInputs, shape_length
from zymi_tui.telemetry.otlp_wire import AttrValue
from zymi_tui.telemetry.shown_items import shown

Bodies = Callable[[CallContext], dict[str, Any] | None]  # the exact request body of a call, if known
# a message's texts made in the builder's process: (number, step stream, sequence) for the store's event,
# (number, its `message_json`) for a message made by the replay
Definition = tuple[int, str, int] | tuple[int, str]
WHOLE = -1  # `CallFacts.heads` of inputs sent as texts (`Numbered`: a compaction request's messages)
# how `Numbered` tells a step's window moved (`DeltaTally`): [NEW] a window made anew, then [ADDED,
# numbers] at its end, [LEFT, count] from its start, [MASKED, places, numbers] in place
NEW, ADDED, LEFT, MASKED = 0, 1, 2, 3


class CallFacts(msgspec.Struct, array_like=True, gc=False):
    """A replayed call's part of its `chat` span: the body's model, temperature and max tokens; the
    system instructions, the input messages (a JSON text, their texts, or `Numbered`'s numbers, `heads`
    of them Layer A's and the memory's) and the tool definitions; the figures (None: no replayed row),
    `(prefix inferred, recorded chars, recorded messages, (rebuilt chars, layer A, B, C bytes) | None,
    (prefix reuse messages, bytes) | None)`."""

    stream: str
    sequence: int
    model: str | None = None
    temperature: Any = None
    max_tokens: Any = None
    system: str | None = None
    inputs: Any = None
    heads: int = 0
    tools: str | None = None
    figures: Any = None


class RowFacts:
    """`facts(row)`: the `CallFacts` of each replayed call, in the order the calls are replayed (a step's
    windows move forward with them: `ShownInputs`)."""

    def __init__(self, bodies: Bodies, content: bool, make: Callable[[MessageModel], Any]) -> None:
        self.bodies, self.content = bodies, content
        self.shown = ShownInputs(make)
        self.inputs = MessageCache(make)  # (a call known only by its entries: once per message of a step)
        self.instructions: tuple[SystemMessage, str | None] | None = None  # the last system prompt and its text

    def forget(self, stream: str) -> None:
        """The step is over: its messages are not needed again."""
        self.shown.forget(stream)
        self.inputs.forget(stream)

    def facts(self, row: CallContext) -> CallFacts:
        body = self.bodies(row)
        sent = body or {}
        facts = CallFacts(
            row.stream_id,
            row.sequence,
            sent.get("model"),
            sent.get("temperature"),
            sent.get("max_tokens") or sent.get("max_completion_tokens"),
        )
        if self.content:
            self._content(facts, row, body)
        r = row.rendered
        if r is None:
            rebuilt = None
        else:
            layers = r.layer_bytes
            rebuilt = (r.chars, layers.get("A", 0), layers.get("B", 0), layers.get("C", 0))
        reuse = None if row.reuse is None or row.is_compaction else (row.reuse.messages, row.reuse.chars)
        facts.figures = (row.prefix_inferred or None, row.recorded_chars, row.recorded_message_count, rebuilt, reuse)
        return facts

    def _content(self, facts: CallFacts, row: CallContext, body: dict[str, Any] | None) -> None:
        """Prompts sent. The messages sent are the rebuilt context's (the body is made of them, in wire
        form): their texts come from `self.shown` (made once per item shown the same way in a step), or
        are made for a context known only by its entries."""
        sent = body.get("messages") if body is not None else None
        tools = body.get("tools") if body is not None else None
        if isinstance(tools, list) and tools:
            facts.tools = as_json(tool_definitions(tools))
        rendered = row.rendered
        shape = rendered.shape if rendered is not None else None
        entries = rendered.entries if rendered is not None and shape is None else None
        if isinstance(sent, list) and (
            len(sent) != shape_length(shape) if shape is not None else entries is None or len(sent) != len(entries)
        ):
            system, inputs = split_messages(sent, prompt_first=True)
            facts.system, facts.inputs = as_json(system) if system else None, as_json(inputs)
            return
        prompt_first = body is not None or not row.prefix_inferred
        if shape is not None:
            drop = not isinstance(sent, list) and row.prefix_inferred
            prompt, texts = self.shown.inputs(row.stream_id, shape, drop_prefix=drop, prompt_first=prompt_first)
            if prompt is not None:
                facts.system = self._instructions(prompt)
            facts.inputs, facts.heads = self._inputs(texts), self.shown.head_count
        elif entries is not None:  # no project: the rebuilt context, less a guessed prefix
            if isinstance(sent, list):
                models = [e.message for e in entries]
            else:
                models = [e.message for e in entries if not (row.prefix_inferred and e.layer == "A")]
            if prompt_first and models and isinstance(models[0], SystemMessage):
                facts.system = self._instructions(models[0])
                models = models[1:]
            facts.inputs, facts.heads = self._messages(row.stream_id, models), WHOLE

    def _inputs(self, values: list[Any]) -> Any:
        return input_messages(values)

    def _messages(self, stream: str, models: list[MessageModel]) -> Any:
        return input_messages(self.inputs.values(stream, models))

    def _instructions(self, prompt: SystemMessage) -> str | None:
        """`gen_ai.system_instructions` of a system prompt, kept for the next call (the same prompt: the
        same text; a prompt is known by value)."""
        if self.instructions is None or self.instructions[0] != prompt:
            parts = instruction_parts(prompt)
            self.instructions = (prompt, as_json(parts) if parts else None)
        return self.instructions[1]


def figure_attrs(attrs: dict[str, AttrValue], figures: Any) -> None:
    """`CallFacts.figures` added to `attrs`, as `zymi.context.*` and `zymi.prefix_reuse.*`."""
    prefix_inferred, approx_chars, message_count, rebuilt, reuse = figures
    attrs["zymi.context.prefix_inferred"] = prefix_inferred
    attrs["zymi.context.approx_chars"] = approx_chars
    attrs["zymi.context.message_count"] = message_count
    if rebuilt is not None:
        attrs["zymi.context.rebuilt_chars"] = rebuilt[0]
        attrs["zymi.context.layer_a_bytes"] = rebuilt[1]
        attrs["zymi.context.layer_b_bytes"] = rebuilt[2]
        attrs["zymi.context.layer_c_bytes"] = rebuilt[3]
    if reuse is not None:
        attrs["zymi.prefix_reuse.messages"] = reuse[0]
        attrs["zymi.prefix_reuse.bytes"] = reuse[1]


class Numbered(RowFacts):
    """`RowFacts` whose input messages are numbers, each defined once (`definitions`, taken by the
    caller with the facts that first name it): a message's texts are made by the builder's process."""

    def __init__(self, bodies: Bodies, content: bool) -> None:
        super().__init__(bodies, content, self._number)
        self.shown = NumberedInputs(self)
        self.definitions: list[Definition] = []
        self.moves: list[list[Any]] = []  # how the window of the call being made moved (`DeltaTally`)
        self.last = 0

    def _number(self, m: MessageModel) -> int:
        self.last += 1
        self.definitions.append((self.last, message_json(m)))
        return self.last

    def item(self, stream: str, item: Item, masked: bool) -> int:
        """An item's number: its event's, when it is shown as the store holds it."""
        if type(item) is not Item or (masked and item.has_masked_text()):
            return self._number(shown(item, masked))
        src = item.text_source
        self.last += 1
        self.definitions.append((self.last, src.stream_id if type(src) is StoreTexts else stream, item.seq))
        return self.last

    def _inputs(self, values: list[Any]) -> Any:
        """(Layer A's and the memory's numbers, how the step's window moved)."""
        moves, self.moves = self.moves, []
        return [values[: self.shown.head_count], moves]

    def _messages(self, stream: str, models: list[MessageModel]) -> Any:
        return [message_json(m) for m in models]


class NumberedInputs(ShownInputs):
    """`ShownInputs` of numbers: an item shown as the store holds it is not read back here."""

    def __init__(self, numbered: Numbered) -> None:
        super().__init__(numbered._number, lambda: DeltaTally(numbered), reads_back=False)
        self.numbered = numbered

    def _item_texts(self, item: Item, masked: bool) -> Any:
        return self.numbered.item(self.stream, item, masked)


class DeltaTally:
    """A window's `Tally` noting how it moved in `Numbered.moves` (its making: `NEW`)."""

    __slots__ = ("numbered",)

    def __init__(self, numbered: Numbered) -> None:
        self.numbered = numbered
        numbered.moves.append([NEW])

    def add(self, values: Sequence[int]) -> None:
        self.numbered.moves.append([ADDED, list(values)])

    def remove(self, values: Sequence[int]) -> None:
        self.numbered.moves.append([LEFT, len(values)])

    def replace(self, places: Sequence[int], was: Sequence[int], now: Sequence[int]) -> None:
        self.numbered.moves.append([MASKED, list(places), list(now)])
