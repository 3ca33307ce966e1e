"""One stream's tool results in its last call's Layer C window, totalled per tool, kept from call to
call: a call whose window is a forward move of the previous one's (the same tail, its cut, mask end and
end no earlier) adds the items that entered, takes off those that left, and moves those it now shows
masked to their masked size; any other window (a compaction, a rebuild, the stream's first) is walked
in full. The totals equal a full walk's: a tool result's tool is the name its call id had when it
entered, so a stream where a call id is named after one of its results was counted "unknown" walks in
full once, and one whose call ids change names walks in full ever after."""

from __future__ import annotations

from collections.abc import Iterable

from zymi_tui.context.layer_c import ASSISTANT, OTHER, Item, Tail
from zymi_tui.context.rendered import Shape
from zymi_tui.events.messages import AssistantMessage, ToolCallInfo, ToolResultMessage

UNKNOWN = "unknown"


class ToolWindow:
    """Per tool in the window: [results, bytes as shown, results shown in full, their bytes]."""

    __slots__ = ("cut", "mask_end", "n", "renamed", "stale", "tail", "tool_at", "totals", "unknown")

    def __init__(self) -> None:
        self.tail: Tail | None = None  # the last window walked (None: walk the next in full)
        self.cut = self.mask_end = self.n = 0
        self.tool_at: dict[int, str] = {}  # item index -> its tool, for the tool results in the window
        self.totals: dict[str, list[int]] = {}
        self.unknown: set[str] = set()  # call ids of results counted "unknown"
        self.stale = False  # one of them was named since: walk the next window in full
        self.renamed = False  # a call id was named twice differently: walk every window in full

    def name(self, names: dict[str, str], calls: Iterable[ToolCallInfo]) -> None:
        """Name the calls' ids (as `dict.update`), noting what would make a kept total wrong."""
        for tc in calls:
            old = names.get(tc.id)
            if old is None:
                if tc.id in self.unknown:
                    self.stale = True
            elif old != tc.name:
                self.renamed = True
            names[tc.id] = tc.name

    def follows(self, shape: Shape) -> bool:
        return (
            shape.tail is self.tail
            and not self.stale
            and not self.renamed
            and shape.cut >= self.cut
            and shape.n >= self.n
            and shape.mask_end >= self.mask_end
        )

    def move(self, shape: Shape, names: dict[str, str]) -> list[tuple[int, str, bool]]:
        """Bring the totals to `shape`'s window; the tool results that entered it, in order: (index,
        tool, whether it counts as rent)."""
        tail, cut, mask_end, n = shape.tail, shape.cut, shape.mask_end, shape.n
        items, tool_at, totals = tail.items, self.tool_at, self.totals
        if self.follows(shape):
            start = max(self.n, cut)
            for j in range(self.cut, min(cut, self.n)):  # left the window, in the form it had
                tool = tool_at.pop(j, None)
                if tool is not None:
                    self._count(totals[tool], items[j], shown_masked(tail, j, self.mask_end), -1)
            for j in range(max(self.mask_end, cut), min(mask_end, self.n)):  # shown masked from now on
                tool = tool_at.get(j)
                if tool is not None:
                    r, t = items[j], totals[tool]
                    self._count(t, r, shown_masked(tail, j, self.mask_end), -1)
                    self._count(t, r, shown_masked(tail, j, mask_end), 1)
        else:
            start = cut
            tool_at.clear()
            totals.clear()
            self.unknown.clear()
            self.stale = False
        entered: list[tuple[int, str, bool]] = []
        for j in range(start, n):
            r = items[j]
            kind = r.kind
            if kind == OTHER:
                continue
            masked = j < mask_end and r.masked_for != -1 and tail.in_turn(j)
            m = r.masked_message() if masked else r.message
            if kind == ASSISTANT:
                assert isinstance(m, AssistantMessage)
                self.name(names, m.tool_calls)
                continue
            assert isinstance(m, ToolResultMessage)
            tool = names.get(m.tool_call_id)
            if tool is None:
                tool = UNKNOWN
                self.unknown.add(m.tool_call_id)
            tool_at[j] = tool
            t = totals.get(tool) or totals.setdefault(tool, [0, 0, 0, 0])
            entered.append((j, tool, self._count(t, r, masked, 1)))
        self.tail, self.cut, self.mask_end, self.n = tail, cut, mask_end, n
        return entered

    @staticmethod
    def _count(t: list[int], r: Item, masked: bool, sign: int) -> bool:
        """Add (sign 1) or take off (-1) a tool result, shown masked or in full; whether it is rent."""
        nbytes = r.masked_bytes if masked else r.bytes
        t[0] += sign
        t[1] += sign * nbytes
        if not masked and not (r.note or "").startswith("masked"):
            t[2] += sign
            t[3] += sign * nbytes
            return True
        return False


def shown_masked(tail: Tail, j: int, mask_end: int) -> bool:
    """Whether a window with this mask end shows item `j` of `tail` in its masked form."""
    return j < mask_end and tail.items[j].masked_for != -1 and tail.in_turn(j)
