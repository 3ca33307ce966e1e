"""The call inspector: the context an LLM call saw, message by message, beside the recorded figures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.errors import UserError
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.messages import AssistantMessage, message_text
from zymi_tui.events.store import EventReader, step_of
from zymi_tui.events.stored import StoredEvent
from zymi_tui.replay.call_context import AGENT_SENT, CallContext
from zymi_tui.replay.call_markdown import context_markdown
from zymi_tui.replay.life import call_diff
from zymi_tui.replay.store_replay import context_with_previous
from zymi_tui.tui.actions import Act, ActionScreen, Nav
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.model import format_size
from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.source import knobs_of
from zymi_tui.tui.state.inspector import bar_cells, figures, preview, role_of, window_segments
from zymi_tui.tui.store_job import with_reader
from zymi_tui.tui.writes import failed_line, write_files


class CallRebuilt(Message):
    def __init__(self, call: CallContext | None, error: str | None, previous: CallContext | None = None) -> None:
        super().__init__()
        self.call = call
        self.error = error
        self.previous = previous


class InspectorScreen(ActionScreen):
    CSS_PATH = str(Path(__file__).with_name("inspector.tcss"))
    FAILURE_PANELS: ClassVar[dict[str, str]] = {"rebuild": "#summary", "step": "#summary"}
    HELP_TITLE = "Call inspector"
    HELP_INTRO = (
        "The context one LLM call saw, rebuilt by the context engine: layer A (system prompt and task), "
        "B (memory), C (history), each message's bytes and tokens and why it looks as it does "
        "(kept, masked, forgotten, summarised), beside the figures the store recorded."
    )
    NAV = (Nav("↑ ↓ PgUp PgDn", "move in the messages; the selected one is shown whole below"),)
    ACTIONS = (
        Act("escape,q", "close", "Back", "Close the inspector and go back to the dashboard.", "back close"),
        Act("p", "step_call(-1)", "Prev call", "The previous LLM call of this step stream.", "previous call back"),
        Act("n", "step_call(1)", "Next call", "The next LLM call of this step stream.", "next call forward"),
        Act("d", "diff", "Diff", "Every change from the previous call (what was added, masked, forgotten, "
            "compacted, changed), in the panel below.", "diff changes previous call compare"),
        Act("ctrl+o", "export", "Export", "Write this call's exact request body (JSON) and its context "
            "(Markdown: layers, reasons, sizes) into the export folder, named in full.",
            "export save json markdown body"),
    )  # fmt: skip

    def __init__(self, call: StoredEvent, store: StoreLocation, project: Path | None) -> None:
        super().__init__()
        self.call = call
        self.store = store
        self.project = project
        self.knobs, self.knob_source = knobs_of(project)
        self.rebuilt: CallContext | None = None
        self.previous: CallContext | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="inspector"):
            with VerticalScroll(id="top"):  # the figures scroll in their share of a short terminal
                yield Static(id="summary")
                yield Static(id="bar")
            yield DataTable(id="messages", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="message"):
                yield Static(id="message-text")
        yield FittingFooter()

    def on_mount(self) -> None:
        ev = self.call.event
        self.query_one("#summary", Static).update(
            safe_text(f"rebuilding the context of {ev.stream_id} seq {ev.sequence}…")
        )
        messages = self.query_one("#messages")
        messages.border_title = "Messages sent (layer A prefix, B memory, C history)"
        messages.focus()  # the keys walk the messages; the figures' scroll above is reached with tab
        self.rebuild()

    def action_step_call(self, delta: int) -> None:
        self.neighbour(delta)

    @work(thread=True, exclusive=True, group="step", exit_on_error=False, description="the neighbouring call")
    def neighbour(self, delta: int) -> None:
        """Move to the stream's previous (delta -1) or next (+1) LLM call, and rebuild it."""
        ev = self.call.event

        async def job(reader: EventReader) -> list[StoredEvent]:
            page = await reader.read_kind_page("llm_call_started", stream_id=ev.stream_id, after_global_id=0,
                                               limit=1_000_000)  # fmt: skip
            return [se for se in page if se.event.stream_id == ev.stream_id]

        calls = with_reader(self.store, job)
        seqs = [se.event.sequence for se in calls]
        at = seqs.index(ev.sequence) if ev.sequence in seqs else -1
        if at < 0 or not 0 <= at + delta < len(calls):
            where = "first" if delta < 0 else "last"
            self.app.call_from_thread(self.notify, f"this is the stream's {where} LLM call")
            return
        self.app.call_from_thread(self.go_to, calls[at + delta])

    def go_to(self, call: StoredEvent) -> None:
        self.call = call
        self.rebuilt = self.previous = None
        self.on_mount()

    def action_diff(self) -> None:
        call = self.rebuilt
        if call is None:
            return
        full = diff_text(call, self.previous, shown=None)
        self.query_one("#message-text", Static).update(full or Text("no previous call to compare with"))
        self.query_one("#message").border_title = "vs the previous call: every change"

    @work(thread=True, exclusive=True, group="rebuild", exit_on_error=False)
    def rebuild(self) -> None:
        async def job(reader: EventReader) -> tuple[CallContext, CallContext | None]:
            ev = self.call.event
            return await context_with_previous(reader, ev.stream_id, ev.sequence, project=self.project)

        try:
            call, previous = with_reader(self.store, job)
            self.post_message(CallRebuilt(call, None, previous))
        except UserError as e:
            self.post_message(CallRebuilt(None, e.one_line()))

    def on_call_rebuilt(self, msg: CallRebuilt) -> None:
        summary = self.query_one("#summary", Static)
        ev = self.call.event
        if msg.call is None:
            summary.update(safe_text(f"{ev.stream_id} seq {ev.sequence}: cannot rebuild: {msg.error}", "red"))
            return
        call = self.rebuilt = msg.call
        self.previous = msg.previous
        t = Text()
        kind = "compaction call" if call.is_compaction else f"iteration {call.iteration}"
        t.append(clean(ev.stream_id), style="bold")
        if call.foreign:  # no zymi build ran for it: what it sent, and its history replayed as it kept it
            t.append(clean(f"  seq {call.sequence} · {kind} · {AGENT_SENT}") + "\n")
            t.append(f"{'':22}{'sent':>12}{'its history':>12}\n", style="dim")
        else:
            t.append(
                clean(f"  seq {call.sequence} · {kind} · knobs: {self.knobs.describe()} ({self.knob_source})") + "\n"
            )
            t.append(f"{'':22}{'recorded':>12}{'rebuilt':>12}\n", style="dim")
        for f in figures(call):
            t.append(f"{f.name:22}{f.recorded:>12}{f.ours:>12}")
            if f.differs:
                t.append("  ≠ DIFFERS", style="bold red")
            elif f.ours != "—" and not f.note:
                t.append("  = same", style="green")
            if f.note:
                t.append(f"  ({f.note})", style="dim")
            t.append("\n")
        if call.rendered is None:
            t.append("no project folder: the prefix (layer A) cannot be known, so the context is not rebuilt\n",
                     style="yellow")  # fmt: skip
        elif call.prefix_inferred:
            t.append("layer A inferred from the recorded size (project prompt not available)\n", style="yellow")
        if call.note:
            t.append(clean(call.note) + "\n", style="dim")
        t.append_text(cache_text(call))
        t.append_text(diff_text(call, self.previous))
        summary.update(t)
        self.draw_bar()
        self.fill_table()

    def draw_bar(self) -> None:
        call = self.rebuilt
        bar = self.query_one("#bar", Static)
        if call is None or call.rendered is None:
            bar.update("")
            return
        k = call.rendered.knobs
        segs = window_segments(call, k.soft_cap_chars, k.hard_cap_chars)
        width = max(self.size.width - 2, 10)
        t = Text()
        for cells, seg in bar_cells(segs, width):
            t.append("█" * cells if seg.name not in ("free to soft cap", "soft to hard cap") else "░" * cells,
                     style=seg.style)  # fmt: skip
        t.append("\n")
        for seg in segs:
            t.append("■ ", style=seg.style)
            t.append(f"{seg.name} {format_size(seg.bytes)}  ")
        used = call.rendered.chars
        share = used / max(k.soft_cap_chars, 1)
        t.append(f"\nused {format_size(used)} of soft cap {format_size(k.soft_cap_chars)} ({share:.0%}), "
                 f"hard cap {format_size(k.hard_cap_chars)}", style="dim")  # fmt: skip
        bar.update(t)

    def on_resize(self) -> None:
        self.draw_bar()

    def fill_table(self) -> None:
        call = self.rebuilt
        table = self.query_one(DataTable)
        table.clear(columns=True)
        if call is None or call.rendered is None:
            return
        entries = call.rendered.entries
        reasons = [clean(e.reason, one_line=True) for e in [*entries, *call.rendered.dropped]]
        reason_width = min(max([6, *(len(r) for r in reasons)]), 90)  # whole: the text column scrolls instead
        role_width = max([4, *(len(role_of(e)) for e in [*entries, *call.rendered.dropped])])  # "assistant+2 call(s)"
        for name, width in (("#", 3), ("layer", 5), ("role", role_width), ("bytes", 7), ("tokens", 6),
                            ("reason", reason_width), ("text", None)):  # fmt: skip
            table.add_column(name, width=width)
        for i, e in enumerate(entries, 1):
            style = "dim" if e.reason.startswith(("masked", "cut")) else ""
            table.add_row(Text(str(i)), Text(e.layer), safe_text(role_of(e)), Text(str(e.bytes)), Text(str(e.tokens)),
                          safe_text(e.reason, style, one_line=True), Text(preview(e)), key=str(i))  # fmt: skip
        for e in call.rendered.dropped:
            table.add_row(Text("–"), Text(e.layer), safe_text(role_of(e)), Text("0"), Text("0"),
                          safe_text(e.reason, "yellow", one_line=True), Text(preview(e)))  # fmt: skip
        if entries:
            self.show_message(0)

    @on(DataTable.RowHighlighted)
    def row_highlighted(self, msg: DataTable.RowHighlighted) -> None:
        self.show_message(msg.cursor_row)

    def show_message(self, index: int) -> None:
        call = self.rebuilt
        if call is None or call.rendered is None:
            return
        rows = call.rendered.entries + call.rendered.dropped
        if not 0 <= index < len(rows):
            return
        self.query_one("#message").border_title = f"message {index + 1} of {len(rows)}"
        e = rows[index]
        t = Text()
        t.append(
            clean(f"message {index + 1}: {role_of(e)}, layer {e.layer}, {e.bytes} bytes — {e.reason}"), style="bold"
        )
        if e.source_seq is not None:
            t.append(f" (from step-stream seq {e.source_seq})", style="dim")
        t.append("\n")
        t.append(clean(message_text(e.message)) or "(no text)")
        if isinstance(e.message, AssistantMessage):
            for c in e.message.tool_calls:
                t.append(clean(f"\n→ tool call {c.id}: {c.name}({c.arguments})"), style="cyan")
        self.query_one("#message-text", Static).update(t)

    def action_export(self) -> None:
        call = self.rebuilt
        if call is None or call.rendered is None:
            self.notify("nothing to export: the context is not rebuilt")
            return
        bodies = RequestBodies(self.project)
        body = bodies.body(call.rendered.wire(), pipeline=call.pipeline, step=step_of(call.stream_id),
                           compaction=call.is_compaction)  # fmt: skip
        stem = re.sub(r"[^\w.-]", "_", call.stream_id)[:120] + f"-seq{call.sequence}"  # a file name from store text
        files = [(f"{stem}.md", lambda: context_markdown(call, body))]
        if body is not None:
            files.append((f"{stem}.json", lambda: json.dumps(body, indent=1, ensure_ascii=False) + "\n"))
        try:
            line = write_files(files)
        except OSError as e:
            self.notify(failed_line(e), severity="error")
            return
        self.notify(line + ("" if body is not None else f" (no request body: {bodies.problem or 'no project'})"))

    def action_close(self) -> None:
        self.dismiss()


DIFF_ORDER = ("added", "masked", "forgot", "compacted", "dropped", "changed")


def cache_text(call: CallContext) -> Text:
    """Recorded cache usage and the prefix this call shares with the stream's previous call."""
    t = Text()
    if call.recorded_cached_tokens is not None:
        t.append(f"cache (recorded): {call.recorded_cached_tokens:,} input tokens read, "
                 f"{call.recorded_cache_creation_tokens or 0:,} written\n")  # fmt: skip
    r = call.reuse
    if r is not None and not call.is_compaction:
        t.append(f"prefix shared with the previous call: {r.messages} message(s), {format_size(r.chars)}")
        if r.broken is not None:
            t.append(f"; broken at message {r.broken.index + 1} ({r.broken.cause})", style="yellow")
        t.append("\n")
    return t


def diff_text(call: CallContext, previous: CallContext | None, shown: int | None = 4) -> Text:
    """The call against the stream's previous one: added, masked, forgot, compacted, changed (bytes); the
    `shown` largest changes listed (None: all), and how many more there are."""
    t = Text()
    shape = call.rendered.shape if call.rendered is not None else None
    prev = previous.rendered.shape if previous is not None and previous.rendered is not None else None
    if shape is None or prev is None or previous is None or call.is_compaction:
        return t
    lines = call_diff(prev, shape)
    t.append(f"vs the previous call (seq {previous.sequence}): ", style="bold")
    if not lines:
        t.append("the same messages\n")
        return t
    for change in DIFF_ORDER:
        mine = [d for d in lines if d.change == change]
        if mine:
            t.append(f"{change} {len(mine)} ({sum(d.bytes for d in mine):+,} B)  ")
    t.append("\n")
    ranked = sorted(lines, key=lambda d: -abs(d.bytes))
    for d in ranked[:shown]:
        t.append(clean(f"  {d.change:9} {d.what} {d.bytes:+,} B", one_line=True) + "\n", style="dim")
    if shown is not None and len(ranked) > shown:
        t.append(f"  … {len(ranked) - shown} more (d: every change)\n", style="dim")
    return t
