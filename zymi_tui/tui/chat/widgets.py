"""The chat screen's widgets: one turn of the conversation, the prompt with history, the context bar."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Collapsible, Input, Markdown, Static

from zymi_tui.context.rendered import RenderedContext
from zymi_tui.tui.chat.transcript import Turn, shown_text
from zymi_tui.tui.model import format_size
from zymi_tui.tui.safe_text import clean, safe_text

STATUS_STYLE = {"running": "yellow", "done": "green", "failed": "red", "cancelled": "magenta"}


def tool_lines(turn: Turn) -> Text:
    t = Text()
    for n, call in enumerate(turn.tools, 1):
        if n > 1:
            t.append("\n")
        t.append(f"{n}. " + clean(call.name, one_line=True), style="bold")
        t.append(" " + clean(call.arguments, one_line=True, max_cells=160), style="dim")
        if call.result_preview is None:
            t.append("\n   … running", style="yellow")
        else:
            style = "red" if call.is_error else ""
            t.append("\n   → " + clean(call.result_preview, one_line=True, max_cells=160), style=style)
    for note in turn.notes:
        t.append("\n• " + clean(note), style="cyan")
    return t


def status_line(turn: Turn) -> Text:
    t = Text()
    t.append(turn.status, style=STATUS_STYLE.get(turn.status, ""))
    t.append(f" · {turn.llm_calls} LLM call{'s' if turn.llm_calls != 1 else ''}", style="dim")
    t.append(f" · {len(turn.tools)} tool call{'s' if len(turn.tools) != 1 else ''}", style="dim")
    if turn.model:
        t.append(" · " + clean(turn.model, one_line=True), style="dim")
    return t


class TurnView(Vertical):
    """You said / what the agent did (folded) / its answer (Markdown) / how the run ended."""

    DEFAULT_CSS = """
    TurnView { height: auto; margin: 0 0 1 0; }
    TurnView .user { color: $text; background: $boost; padding: 0 1; }
    TurnView Collapsible { padding: 0; margin: 0; border: none; }
    TurnView Collapsible > Contents { padding: 0 0 0 2; }
    TurnView .answer { margin: 0; padding: 0 1; }
    TurnView .error { color: $error; padding: 0 1; }
    TurnView .status { padding: 0 1; }
    TurnView .compaction { padding: 0 1; color: $warning; text-style: bold; }
    TurnView .compaction.-grew { color: $error; }
    """

    def __init__(self, turn: Turn) -> None:
        super().__init__()
        self.turn = turn
        self._answer_shown: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("you › ", style="bold") + safe_text(shown_text(self.turn.user)), classes="user")
        with Collapsible(title=self._tools_title(), collapsed=True, classes="tools"):
            yield Static(tool_lines(self.turn), classes="tool-lines")
        yield Static("", classes="compaction")
        yield Markdown("", classes="answer")
        yield Static("", classes="error")
        yield Static(status_line(self.turn), classes="status")

    def on_mount(self) -> None:
        self.refresh_turn()

    def _tools_title(self) -> str:
        n, extra = len(self.turn.tools), len(self.turn.notes)
        title = f"{n} tool call{'s' if n != 1 else ''}"
        return title + (f", {extra} note{'s' if extra != 1 else ''}" if extra else "")

    def refresh_turn(self) -> None:
        turn = self.turn
        fold = self.query_one(Collapsible)
        fold.title = self._tools_title()
        fold.display = bool(turn.tools or turn.notes)
        self.query_one(".tool-lines", Static).update(tool_lines(turn))
        answer = turn.answer or ""
        if answer != self._answer_shown:
            self._answer_shown = answer
            md = self.query_one(Markdown)
            md.display = bool(answer)
            md.update(clean(shown_text(answer, 20_000)))
        err = self.query_one(".error", Static)
        err.display = turn.error is not None
        err.update(safe_text(f"error: {turn.error}" if turn.error else ""))
        comp = self.query_one(".compaction", Static)
        comp.display = bool(turn.compactions)
        comp.set_class(any(grew for _, grew in turn.compactions), "-grew")
        comp.update(safe_text("\n".join(f"⟲ {what}" for what, _ in turn.compactions)))
        self.query_one(".status", Static).update(status_line(turn))


class PromptInput(Input):
    """The message box: Enter sends, ↑/↓ walk the messages sent before."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "history(-1)", "Previous", show=False),
        Binding("down", "history(1)", "Next", show=False),
    ]

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.history: list[str] = []
        self._pos = 0

    def remember(self, text: str) -> None:
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._pos = len(self.history)

    def action_history(self, delta: int) -> None:
        if not self.history:
            return
        self._pos = max(0, min(len(self.history), self._pos + delta))
        self.value = self.history[self._pos] if self._pos < len(self.history) else ""
        self.cursor_position = len(self.value)


SEGMENTS = [  # (key, label, colour)
    ("A", "system + task", "blue"),
    ("B", "memory", "magenta"),
    ("kept", "kept", "green"),
    ("masked", "masked", "yellow"),
    ("summary", "summaries", "cyan"),
]


def segment_bytes(ctx: RenderedContext) -> dict[str, int]:
    """The context's bytes by what happened to them: layer A, B, and Layer C kept / masked / summarised."""
    out = dict.fromkeys((key for key, _, _ in SEGMENTS), 0)
    for e in ctx.entries:
        if e.layer in ("A", "B"):
            out[e.layer] += e.bytes
        elif "summary" in e.reason:
            out["summary"] += e.bytes
        elif e.reason.startswith(("masked", "cut")):
            out["masked"] += e.bytes
        else:
            out["kept"] += e.bytes
    return out


def context_bar(ctx: RenderedContext, width: int, title: str) -> Text:
    """A one-line bar of the context, segmented, scaled to the hard cap, with the soft cap marked."""
    seg = segment_bytes(ctx)
    knobs = ctx.knobs
    scale = max(knobs.hard_cap_chars, ctx.chars, 1)
    width = max(width, 10)
    t = Text(title + "\n", style="bold")
    cells: list[tuple[str, str]] = []
    for key, _label, colour in SEGMENTS:
        n = round(seg[key] * width / scale)
        if seg[key] and n == 0:
            n = 1
        cells += [("█", colour)] * n
    soft_at = min(width - 1, round(knobs.soft_cap_chars * width / scale))
    while len(cells) < width:
        cells.append(("·", "dim"))
    cells = cells[:width]
    ch, _ = cells[soft_at]
    cells[soft_at] = ("┃" if ch == "·" else ch, "bold red" if ch == "·" else "bold red reverse")
    for ch, style in cells:
        t.append(ch, style=style)
    caps = f"soft cap {format_size(knobs.soft_cap_chars)} · hard {format_size(knobs.hard_cap_chars)}"
    t.append(f"\n{format_size(ctx.chars)} in {ctx.message_count} messages · {caps}\n", style="dim")
    for key, label, colour in SEGMENTS:
        if seg[key]:
            t.append("█ ", style=colour)
            t.append(f"{label} {format_size(seg[key])}  ")
    if ctx.forgotten:
        t.append(f"\n{ctx.forgotten} messages forgotten (forget_after_turns={knobs.forget_after_turns})", style="dim")
    if ctx.compaction is not None:
        t.append("\nthe next call would compact first (over the soft cap)", style="yellow")
    return t
