"""`ToolWindow`'s kept totals equal a walk of each whole window in the way `Watch._shape_tools` walked
it before the totals were kept (names updated in window order, kept across calls), on windows that the
recorded scenarios never make: a tool result that comes before the call naming its id (counted
"unknown", then named), a call id named again under another tool, a mask end that moves back."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

from zymi_tui.context.layer_c import ASSISTANT, OTHER, TOOL, Item, Tail
from zymi_tui.events.messages import AssistantMessage, ToolCallInfo, ToolResultMessage, UserMessage
from zymi_tui.replay.advice.tool_window import ToolWindow


def _walk(tail: Tail, cut: int, mask_end: int, n: int, names: dict[str, str]) -> dict[str, tuple[int, int]]:
    """The whole window, item by item (main's `_shape_tools`): per tool, (bytes as shown, rent)."""
    sent: Counter[str] = Counter()
    rent: Counter[str] = Counter()
    for j in range(cut, n):
        r = tail.items[j]
        if r.kind == OTHER:
            continue
        masked = j < mask_end and r.masked_for != -1 and tail.in_turn(j)
        m = r.masked_message() if masked else r.message
        if isinstance(m, AssistantMessage):
            names.update((tc.id, tc.name) for tc in m.tool_calls)
            continue
        assert isinstance(m, ToolResultMessage)
        tool = names.get(m.tool_call_id, "unknown")
        nbytes = r.masked_bytes if masked else r.bytes
        sent[tool] += nbytes
        if not masked:
            rent[tool] += nbytes
    return {t: (sent[t], rent[t]) for t in sent}


def _kept(w: ToolWindow) -> dict[str, tuple[int, int]]:
    return {t: (v[1], v[3]) for t, v in w.totals.items() if v[0]}


def _assistant(seq: int, *calls: tuple[str, str]) -> Item:
    tcs = tuple(ToolCallInfo(id=i, name=name, arguments='{"path": "a.py"}') for i, name in calls)
    return Item(seq, AssistantMessage(content="x" * 300, tool_calls=tcs), 300, ASSISTANT)


def _result(seq: int, call_id: str, size: int) -> Item:
    return Item(seq, ToolResultMessage(tool_call_id=call_id, content="r" * size), size, TOOL)


def test_kept_totals_equal_a_walk_of_each_window() -> None:
    tail = Tail()
    for item in (
        _result(0, "early", 500),  # before any call: no turn, counted "unknown"
        _assistant(1, ("a", "grep"), ("early", "read")),  # names "early" after it was counted
        _result(2, "a", 2000),
        _result(3, "early", 700),
        Item(4, UserMessage(content="next"), 4, OTHER),
        _assistant(5, ("b", "grep"), ("a", "cat")),  # "a" named again, as another tool
        _result(6, "b", 3000),
        _result(7, "a", 900),
        _assistant(8, ("c", "ls")),
        _result(9, "c", 100),
    ):
        tail.append(item)
    runs = [  # (cut, mask_end, n) of each call's window
        [(0, 0, 1), (0, 0, 4), (0, 0, 4), (0, 3, 5), (1, 3, 7), (1, 6, 8), (2, 7, 8), (3, 9, 10), (3, 9, 10)],
        [(5, 5, 8), (5, 8, 8), (5, 6, 9), (6, 6, 10)],  # no id named twice: the mask end moves back
    ]
    for windows in runs:
        kept, names_kept, names_walked = ToolWindow(), {}, {}  # type: ignore[var-annotated]
        for cut, mask_end, n in windows:
            shape: Any = SimpleNamespace(tail=tail, cut=cut, mask_end=mask_end, n=n)
            kept.move(shape, names_kept)
            assert _kept(kept) == _walk(tail, cut, mask_end, n, names_walked), (cut, mask_end, n)
        assert names_kept == names_walked
