"""Layer B is made once per memory snapshot (`memory_block`) and remembered: a snapshot rewritten
between two calls, even to a value of the same length, must change what the second call shows and
break its prefix reuse at the memory block; one rewritten back to an earlier value must not.

The expected texts are zymi's format written out by hand (`[memory]\\n<key>: <first 200 bytes>\\n`,
docs/context.md), not made by the code under test."""

from __future__ import annotations

from tests.test_context_properties import PREFIX
from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.rendered import RenderedContext
from zymi_tui.context.reuse import prefix_reuse

A_MESSAGES = 2  # PREFIX has a system prompt and a task
A_BYTES = len(PREFIX.system_prompt.encode()) + len(PREFIX.task.encode())


def _memory_message(ctx: RenderedContext) -> str:
    [b] = [e for e in ctx.entries if e.layer == "B"]
    assert isinstance(b.message.content, str)
    return b.message.content


def test_a_value_rewritten_to_the_same_length_changes_the_block_and_breaks_reuse() -> None:
    b = ContextBuilder(ContextKnobs(), PREFIX)
    first = b.build([("plan", "aaa"), ("note", "é" * 150)])
    second = b.build([("plan", "bbb"), ("note", "é" * 150)])
    assert first.shape is not None and second.shape is not None
    # 150 two-byte characters cut to 200 bytes: 100 of them
    assert _memory_message(first) == "[memory]\nplan: aaa\nnote: " + "é" * 100 + "\n"
    assert _memory_message(second) == "[memory]\nplan: bbb\nnote: " + "é" * 100 + "\n"
    assert second.layer_bytes["B"] == len(("[memory]\nplan: bbb\nnote: " + "é" * 100 + "\n").encode())
    reuse = prefix_reuse(first.shape, second.shape)
    assert reuse.messages == A_MESSAGES and reuse.chars == A_BYTES
    assert reuse.broken is not None and (reuse.broken.layer, reuse.broken.index) == ("B", A_MESSAGES)
    assert reuse.broken.cause == "memory block changed"


def test_a_value_written_back_reuses_the_whole_list_again() -> None:
    b = ContextBuilder(ContextKnobs(), PREFIX)
    calls = [b.build([("plan", v)]) for v in ("aaa", "bbb", "".join(["aa", "a"]))]  # the last: a new, equal string
    shapes = [c.shape for c in calls]
    assert shapes[0] is not None and shapes[1] is not None and shapes[2] is not None
    assert prefix_reuse(shapes[1], shapes[2]).broken is not None
    back = prefix_reuse(shapes[0], shapes[2])
    block = len(b"[memory]\nplan: aaa\n")
    assert (back.messages, back.chars, back.broken) == (A_MESSAGES + 1, A_BYTES + block, None)
    assert _memory_message(calls[2]) == "[memory]\nplan: aaa\n"


def test_keys_written_in_another_order_are_the_same_block_for_reuse() -> None:
    """zymi writes the keys in no stable order: the block is compared as a set of lines."""
    b = ContextBuilder(ContextKnobs(), PREFIX)
    one = b.build([("a", "1"), ("b", "2")])
    two = b.build([("b", "2"), ("a", "1")])
    assert one.shape is not None and two.shape is not None
    assert _memory_message(two) == "[memory]\nb: 2\na: 1\n"
    assert prefix_reuse(one.shape, two.shape).broken is None
