"""What the call inspector shows, from a rebuilt call (zymi_tui.replay): pure, no widgets.

The recorded figures come from the store; ours from the context engine. Any difference is
listed, never hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

from zymi_tui.context.rendered import ContextEntry
from zymi_tui.events.messages import AssistantMessage, ToolResultMessage, message_text
from zymi_tui.replay.call_context import CallContext
from zymi_tui.tui.safe_text import clean


@dataclass(frozen=True, slots=True)
class Segment:
    name: str
    bytes: int
    style: str


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    recorded: str
    ours: str
    differs: bool
    note: str = ""


def is_masked(entry: ContextEntry) -> bool:
    return entry.reason.startswith(("masked", "cut"))


def window_segments(call: CallContext, soft_cap: int, hard_cap: int) -> list[Segment]:
    """prefix (A), memory (B), history (C kept), masked (C placeholders), free to the soft cap, to the hard cap."""
    r = call.rendered
    if r is None:
        return []
    masked = sum(e.bytes for e in r.entries if e.layer == "C" and is_masked(e))
    history = r.layer_bytes.get("C", 0) - masked
    used = r.chars
    return [
        Segment("prefix", r.layer_bytes.get("A", 0), "bold magenta"),
        Segment("memory", r.layer_bytes.get("B", 0), "bold blue"),
        Segment("history", max(history, 0), "bold cyan"),
        Segment("masked", masked, "dim cyan"),
        Segment("free to soft cap", max(soft_cap - used, 0), "green"),
        Segment("soft to hard cap", max(hard_cap - max(soft_cap, used), 0), "yellow"),
    ]


def bar_cells(segments: list[Segment], width: int) -> list[tuple[int, Segment]]:
    """Cells per segment (largest remainder), every non-empty segment at least one cell."""
    total = sum(s.bytes for s in segments)
    if total <= 0 or width <= 0:
        return []
    raw = [s.bytes * width / total for s in segments]
    cells = [max(1, int(x)) if s.bytes > 0 else 0 for x, s in zip(raw, segments, strict=True)]
    order = sorted(range(len(segments)), key=lambda i: raw[i] - int(raw[i]), reverse=True)
    i = 0
    while sum(cells) < width and order:
        j = order[i % len(order)]
        if segments[j].bytes > 0:
            cells[j] += 1
        i += 1
    while sum(cells) > width:
        j = max(range(len(cells)), key=lambda n: cells[n])
        cells[j] -= 1
    return [(c, s) for c, s in zip(cells, segments, strict=True) if c > 0]


REWRITTEN = "the agent dropped or rewrote messages: its input is not its history appended"


def figures(call: CallContext) -> list[Figure]:
    """Recorded against rebuilt. A foreign agent's call (spans) was never built by zymi: a difference
    there says the agent's own policy is not append-only, not that a builder disagrees."""
    r = call.rendered
    out = []
    ours_chars = "—" if r is None else str(r.chars)
    differs = r is not None and r.chars != call.recorded_chars
    out.append(Figure("approx_context_chars", str(call.recorded_chars), ours_chars,
                      differs and not call.foreign, REWRITTEN if differs and call.foreign else ""))  # fmt: skip
    ours_count = "—" if r is None else str(r.message_count)
    differs = r is not None and r.message_count != call.recorded_message_count
    out.append(Figure("message_count", str(call.recorded_message_count), ours_count,
                      differs and not call.foreign, REWRITTEN if differs and call.foreign else ""))  # fmt: skip
    if r is not None:
        est = sum(e.tokens for e in r.entries)
        rec = "—" if call.recorded_input_tokens is None else str(call.recorded_input_tokens)
        note = "ours: estimated from message texts only"
        out.append(Figure("input tokens", rec, f"~{est}", False, note))
    return out


def role_of(entry: ContextEntry) -> str:
    m = entry.message
    if isinstance(m, AssistantMessage) and m.tool_calls:
        return f"assistant+{len(m.tool_calls)} call(s)"
    if isinstance(m, ToolResultMessage):
        return "tool"
    return m.role


def preview(entry: ContextEntry, n: int = 80) -> str:
    """The message on one line, display-safe, at most `n` cells."""
    text = message_text(entry.message)
    if not text and isinstance(entry.message, AssistantMessage):
        text = " ".join(f"{c.name}({c.arguments})" for c in entry.message.tool_calls)
    return clean(text, one_line=True, max_cells=n)
