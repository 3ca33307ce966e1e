"""The call inspector: the context an LLM call saw, message by message, beside the recorded figures."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from zymi_tui.events import kinds as k
from zymi_tui.events.envelope import StoredEvent
from zymi_tui.events.store import EventReader
from zymi_tui.tui.model import format_size


def recorded_figures(call: StoredEvent, events: list[StoredEvent]) -> list[tuple[str, str]]:
    """What the store says about a call: iteration, message count, size, and the usage of its completion."""
    d = call.event.kind
    assert isinstance(d, k.LlmCallStarted)
    rows = [
        ("stream", call.event.stream_id),
        ("sequence", str(call.event.sequence)),
        ("iteration", f"{d.iteration}" + (" (compaction call)" if d.iteration == 0 else "")),
        ("messages", str(d.message_count)),
        ("approx_context_chars", f"{d.approx_context_chars} ({format_size(d.approx_context_chars)})"),
    ]
    done = next((e for e in events if e.global_id > call.global_id and e.event.stream_id == call.event.stream_id
                 and isinstance(e.event.kind, (k.LlmCallCompleted, k.LlmCallFailed))), None)  # fmt: skip
    if done is not None and isinstance(done.event.kind, k.LlmCallCompleted) and done.event.kind.usage:
        u = done.event.kind.usage
        rows.append(("input tokens", f"{u.input_tokens} (cached {u.cached_input_tokens}) [recorded usage]"))
    elif done is not None and isinstance(done.event.kind, k.LlmCallFailed):
        rows.append(("result", f"failed: {done.event.kind.error}"))
    return rows


class InspectorScreen(Screen[None]):
    CSS_PATH = "inspector.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Back")]

    def __init__(self, call: StoredEvent, events: list[StoredEvent], project: Path | None,
                 reader: EventReader | None) -> None:  # fmt: skip
        super().__init__()
        self.call = call
        self.events = events
        self.project = project
        self.reader = reader

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="inspector"):
            yield Static(id="recorded")
            yield Static(id="rebuilt")
        yield Footer()

    def on_mount(self) -> None:
        t = Text("Recorded by the engine\n", style="bold")
        for key, value in recorded_figures(self.call, self.events):
            t.append(f"  {key}: ", style="dim")
            t.append(value + "\n")
        self.query_one("#recorded", Static).update(t)
        self.query_one("#rebuilt", Static).update(
            Text("The context rebuild (layers, masking, reasons) is not available in this build.", style="yellow")
        )

    def action_close(self) -> None:
        self.dismiss()
