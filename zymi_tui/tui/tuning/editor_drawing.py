"""What the knob editor draws: the curve, the summary of the picked call's what-if, the knobs' errors and
state, and the table of the messages that changed."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widgets import Input, Static

from zymi_tui.context.knobs import KNOB_NAMES, ContextKnobs
from zymi_tui.replay.call_context import CallContext
from zymi_tui.tui.safe_text import clean
from zymi_tui.tui.tuning.curve_view import CurveView
from zymi_tui.tui.tuning.diff_table import DiffTable
from zymi_tui.tui.tuning.editor_parts import Quiet
from zymi_tui.tui.tuning.editor_state import MAX_ROWS, RECORDED, EditorState, Row
from zymi_tui.tui.tuning.model import CallDiff, curve


class EditorDrawing(EditorState):
    """The editor's view, drawn from its state."""

    def show_errors(self) -> None:
        self.errors_due = False
        for name in KNOB_NAMES:
            err = self.form.errors.get(name, "")
            self.query_one(f"#err-{name}", Quiet).show(Text(err, style="bold red"), grow_only=True)
            self.query_one(f"#knob-{name}", Input).set_class(bool(err), "-invalid")
        knobs = self.form.knobs
        state = (
            "invalid: nothing changed" if self.form.errors else ("edited (what-if)" if self.form.edited else RECORDED)
        )
        if knobs is not None:
            state += f"\n{knobs.describe()}"
        self.query_one("#state", Quiet).show(state)

    def draw_curve(self, knobs: ContextKnobs, what_if: list[CallContext] | None, *, partial: bool = False) -> None:
        self.curve = curve(self.recorded_calls, what_if, partial=partial)
        plot = self.query_one(CurveView)
        plot.picked = self.picked
        edited = what_if is not None
        rec_caps = (self.recorded.soft_cap_chars, self.recorded.hard_cap_chars)
        plot.show(self.curve, (knobs.soft_cap_chars, knobs.hard_cap_chars), rec_caps, edited=edited)
        self.query_one("#caveat", Static).display = edited

    def redraw(self, *, then: Callable[[], object] | None = None) -> None:
        """Every part of the view; `then` is called once it is on screen."""
        self.draw_curve(self.form.knobs or self.recorded, self.what_if_calls)
        self.show_summary()
        self.draw_diff()
        self.query_one("#elapsed", Quiet).show(Text(self.progress_text(), style="dim"), then=then)

    def progress_text(self) -> str:
        """The exact what-if's state: calls done so far, or the whole stream's peak and compactions."""
        total = len(self.agent_calls(self.recorded_calls))
        if self.pending:
            done = len(self.agent_calls(self.partial or []))
            return f"exact what-if of the stream: {done} of {total} calls…"
        calls = self.what_if_calls
        if calls is None or self.last_ms is None:
            return ""
        agents = self.agent_calls(calls)
        peak = max((c.rendered.chars for c in agents if c.rendered and not c.rendered.hard_cap_exceeded), default=0)
        compactions = sum(c.is_compaction for c in calls)
        return (
            f"exact what-if of all {len(agents)} calls: peak {peak:,} bytes, {compactions} compaction(s) "
            f"· {self.last_ms:.0f} ms"
        )

    def show_summary(self, then: Callable[[], object] | None = None) -> None:
        """The summary, its height kept while the knobs stay edited (it only grows): a what-if's
        states (running, picked call known, done) differ by a line or two, and each change of height
        laid the curve and the table out again and redrew them. The knobs' errors and state too, if
        an edit left them to be shown with it. `then`: called once it is on screen."""
        if self.errors_due:
            self.show_errors()
        self.query_one("#summary", Quiet).show(self.summary_text(), grow_only=self.form.edited, then=then)

    def summary_text(self) -> Text:
        call = self.picked_call(self.recorded_calls)
        if call is None:
            return Text("no agent LLM call on this stream")
        n = len(self.agent_calls(self.recorded_calls))
        tokens = "—" if call.recorded_input_tokens is None else f"{call.recorded_input_tokens:,} tokens (reported)"
        head = (f"call {self.picked + 1}/{n} · seq {call.sequence} · recorded: {call.recorded_chars:,} bytes, "
                f"{call.recorded_message_count} messages, {tokens}")  # fmt: skip
        text = Text(head)
        d = self.diff
        if self.pending:
            if d is not None and self.diff_knobs == self.form.knobs:  # the picked call is known already
                self.append_call(text, d)
            else:
                text.append("\nwhat-if: replaying the stream under these knobs…", style="dim")
        elif self.what_if_calls is not None:
            after = self.picked_call(self.what_if_calls)
            if after is None or after.rendered is None:
                text.append("\nwhat-if: no context for this call", style="red")
            elif d is not None:
                self.append_call(text, d)
            sims = self.curve.simulated if self.curve else 0
            if sims:
                text.append(
                    f"\n{sims} simulated compaction(s) on this stream (summary sizes estimated)", style="yellow"
                )
        return text

    @staticmethod
    def append_call(text: Text, d: CallDiff) -> None:
        """The picked call's what-if figures and changes."""
        text.append(
            f"\nwhat-if (estimated): {d.chars_after:,} bytes ({d.chars_delta:+,}), "
            f"tokens {d.tokens_delta:+,} (o200k est. over the changed messages), {d.messages_after} messages · "
            f"added {d.count('added')}, dropped {d.count('dropped')}, masked {d.count('masked')}, "
            f"unmasked {d.count('unmasked')}, compacted {d.count('compacted')}",
            style="magenta",
        )
        if d.hard_cap_exceeded:
            text.append("\nthis call would FAIL the hard cap (step error; nothing sent)", style="bold red")

    def diff_rows(self) -> tuple[str, list[Row]]:
        """The table's title and rows: the recorded context's last messages, or the changes first."""
        if self.diff is None:
            call = self.picked_call(self.recorded_calls)
            if call is None or call.rendered is None:
                return "", []
            rows = [
                ("", e.layer, "" if e.source_seq is None else str(e.source_seq), clean(e.message.role),
                 f"{e.bytes:,}", "", clean(e.reason, one_line=True))
                for e in call.rendered.entries[-MAX_ROWS:]
            ]  # fmt: skip
            return "recorded context (last messages)", rows
        changed, same = self.diff.changes, self.diff.unchanged
        rows = [
            (c.status, c.layer, "" if c.source_seq is None else str(c.source_seq), clean(c.role),
             f"{c.bytes_before:,}→{c.bytes_after:,}", f"{c.bytes_delta:+,}", clean(c.reason, one_line=True))
            for c in changed[:MAX_ROWS]
        ]  # fmt: skip
        hidden = max(0, len(changed) - MAX_ROWS)
        more = f"; {hidden} more changed not listed" if hidden else ""
        return f"what-if vs recorded: {len(changed)} changed, {same} unchanged (changes first{more})", rows

    def draw_diff(self) -> None:
        """The diff table: only the rows that changed are drawn again (`DiffTable`), and nothing when
        the diff is the one it shows (drawn for the picked call, then again when the stream ends)."""
        if self.drawn is not None and self.drawn[0] is self.diff and self.drawn[1] == self.picked:
            return
        self.drawn = (self.diff, self.picked)
        title, rows = self.diff_rows()
        self.query_one("#diff-title", Quiet).show(Text(title, style="bold"))
        self.query_one(DiffTable).show(list(rows))
