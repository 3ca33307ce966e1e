"""`ShownInputs` keeps each step stream's last window and moves it forward (telemetry/otel_inputs.py);
its texts must equal a walk of the whole context made by the context package (`splice.context_entries`,
message for message) on windows the recorded stores never make: a mask end passing items shown in full,
a mask end moving back, a compaction (a new tail holding the same items), a fresh step (the window cut
past everything shown before), a tool result whose call id is named again by a later turn (its masked
form made for that turn is a copy), a leading system message of Layer C taken as the prompt, and an item
put in a turn by another tail after this one showed it outside any."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.layer_c import ASSISTANT, OTHER, TOOL, Item, Tail
from zymi_tui.context.masking import memory_block
from zymi_tui.context.rendered import Prefix
from zymi_tui.context.splice import context_entries
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolCallInfo,
    ToolResultMessage,
    UserMessage,
)
from zymi_tui.telemetry.otel_content import message_texts
from zymi_tui.telemetry.otel_inputs import ShownInputs

PREFIX = Prefix(system_prompt="you are a test", task="do the task")
MEMORY = (("goal", "pass"),)


def _assistant(seq: int, *calls: tuple[str, str], size: int = 600) -> Item:
    tcs = tuple(ToolCallInfo(id=i, name=name, arguments=f'{{"path": "{name}.py"}}') for i, name in calls)
    return Item(seq, AssistantMessage(content="x" * size, tool_calls=tcs), size, ASSISTANT)


def _result(seq: int, call_id: str, size: int) -> Item:
    return Item(seq, ToolResultMessage(tool_call_id=call_id, content="r" * size), size, TOOL)


def _other(seq: int, message: MessageModel) -> Item:
    return Item(seq, message, len(str(message)), OTHER)


def _tail(items: list[Item]) -> Tail:
    tail = Tail()
    for item in items:
        tail.append(item)
    return tail


def _walked(shape: Any, *, drop: bool, prompt_first: bool) -> tuple[SystemMessage | None, list[tuple[str, bytes]]]:
    """The whole context's messages (`context_entries`), as `TraceBuilder` reads a call made of them."""
    b_text = memory_block(shape.memory).text if shape.memory else ""
    entries = context_entries(
        shape.prefix, shape.tail, shape.n, ContextKnobs(), list(shape.memory), b_text, shape.cut, shape.mask_end
    )
    models = [e.message for e in entries if not (drop and e.layer == "A")]
    prompt = None
    if prompt_first and models and isinstance(models[0], SystemMessage):
        prompt, models = models[0], models[1:]
    return prompt, [message_texts(m) for m in models]


def _check(calls: list[tuple[str, Tail, int, int, int, bool]], memory: bool = False) -> int:
    """Each call (stream, tail, cut, mask_end, n, moved: its window is expected to be the previous one
    moved forward), under every prefix form; returns how many calls were moved."""
    moved = 0
    for drop in (False, True):
        for prompt_first in (True, False):
            shown = ShownInputs(message_texts)
            for stream, tail, cut, mask_end, n, forward in calls:
                shape: Any = SimpleNamespace(
                    prefix=PREFIX, memory=MEMORY if memory else (), tail=tail, cut=cut, mask_end=mask_end, n=n
                )
                before = shown.streams.get(stream)
                got = shown.inputs(stream, shape, drop_prefix=drop, prompt_first=prompt_first)
                assert got == _walked(shape, drop=drop, prompt_first=prompt_first), (stream, cut, mask_end, n)
                assert (shown.streams[stream] is before) == forward, (stream, cut, mask_end, n)
                moved += forward
    return moved


def _turns() -> list[Item]:
    return [
        _other(0, UserMessage(content="start")),
        _assistant(1, ("a", "grep"), ("b", "read")),
        _result(2, "a", 2000),
        _result(3, "b", 900),
        _other(4, UserMessage(content="next")),
        _assistant(5, ("c", "ls")),
        _result(6, "c", 3000),
        _assistant(7, ("d", "cat"), size=50),  # short: its masked form is itself
        _result(8, "d", 40),
        _assistant(9, ("e", "grep")),
        _result(10, "e", 5000),
    ]


def test_a_mask_end_passing_items_shown_in_full_masks_them() -> None:
    tail = _tail(_turns())
    s = "run:step:work"
    calls = [
        (s, tail, 0, 0, 3, False),  # first call: walked
        (s, tail, 0, 0, 4, True),
        (s, tail, 0, 2, 6, True),  # the first turn's assistant and a result go masked
        (s, tail, 0, 4, 7, True),
        (s, tail, 1, 7, 9, True),  # the window's start moves and the mask passes the short assistant
        (s, tail, 1, 9, 11, True),
        (s, tail, 1, 11, 11, True),  # everything masked, nothing entered
    ]
    assert _check(calls) == 4 * 6
    assert _check(calls, memory=True) == 4 * 6


def test_a_mask_end_or_end_moving_back_walks_the_window() -> None:
    tail = _tail(_turns())
    s = "run:step:work"
    calls = [
        (s, tail, 0, 6, 9, False),
        (s, tail, 0, 3, 10, False),
        (s, tail, 0, 10, 11, True),
        (s, tail, 0, 10, 10, False),  # and the end
    ]
    assert _check(calls) == 4


def test_a_compaction_and_a_fresh_step_walk_the_window() -> None:
    items = _turns()
    tail = _tail(items)
    summary = _other(100, UserMessage(content="[compacted history] earlier turns"))
    compacted = _tail([summary, *items[5:]])  # a new tail: the same items after the summary
    s = "run:step:work"
    calls = [
        (s, tail, 0, 1, 4, False),
        (s, compacted, 0, 2, 5, False),  # compaction: another tail (no earlier by its figures)
        (s, compacted, 0, 3, 5, True),
        (s, compacted, 6, 6, 7, False),  # fresh: cut past everything shown before
        (s, compacted, 6, 7, 7, True),
        (s, compacted, 2, 7, 7, False),  # the cut moved back
    ]
    assert _check(calls) == 4 * 2


def test_a_result_whose_call_id_a_later_turn_names_again_is_a_copy() -> None:
    items = _turns()
    tail = _tail(items)
    renamed = _assistant(20, ("a", "cat"))  # call id "a" again, under another tool
    again = _tail([*items[:4], _other(19, UserMessage(content="go on")), renamed, items[2]])  # result "a" again
    assert again.items[6] is not items[2]  # masked for another turn already: copied
    s, t = "run:step:work", "run:step:other"
    calls = [
        (s, tail, 0, 1, 4, False),
        (t, again, 0, 2, 7, False),
        (s, tail, 0, 4, 7, True),
        (t, again, 0, 7, 7, True),  # the copy masked with its own turn's call: "cat"
        (s, tail, 0, 7, 9, True),
    ]
    assert _check(calls) == 4 * 3


def test_a_leading_system_message_of_layer_c_and_an_item_put_in_a_turn_later() -> None:
    loose = _result(1, "z", 800)  # no turn in `tail`: never masked there
    items = [_other(0, SystemMessage(content="the summary as a system message")), loose, *_turns()[1:6]]
    tail = _tail(items)
    s, t = "run:step:work", "run:step:other"
    calls = [
        (s, tail, 0, 0, 3, False),
        (t, _tail([_assistant(30, ("z", "grep")), loose]), 0, 2, 2, False),  # `loose` goes in a turn there
        (s, tail, 0, 2, 5, True),  # the mask passes it: `tail` still shows it in full (in no turn there)
        (s, tail, 0, 7, 7, True),
        (s, tail, 1, 7, 7, True),  # the system message leaves: the prompt is Layer A's again
    ]
    assert loose.masked_for != -1
    assert _check(calls) == 4 * 3
