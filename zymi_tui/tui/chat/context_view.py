"""F2: the last call's context, message by message, as recorded or rebuilt under another profile.

Rebuilt with `zymi_tui.replay.context_at` and the chosen profile's knobs. Under other knobs than
the recorded ones it is a what-if that assumes the same trajectory (the same tool calls and answers);
the screen says so.
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from zymi_tui.engine.chat import PROJECT_PROFILE, profile_names
from zymi_tui.events.messages import message_text
from zymi_tui.replay.call_context import SAME_TRAJECTORY, CallContext
from zymi_tui.tui.actions import Act, ActionScreen
from zymi_tui.tui.chat.session import ChatSession
from zymi_tui.tui.chat.widgets import context_bar
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.model import format_size
from zymi_tui.tui.safe_text import clean, safe_text

ROLE = {"SystemMessage": "system", "UserMessage": "user", "AssistantMessage": "assistant", "ToolResultMessage": "tool"}


def entries_table(cc: CallContext) -> Table:
    table = Table(expand=True, show_edge=False, pad_edge=False)
    for name, kw in (
        ("layer", {"width": 5}),
        ("seq", {"width": 5}),
        ("role", {"width": 9}),
        ("bytes", {"width": 7, "justify": "right"}),
        ("why", {"ratio": 2}),
        ("text", {"ratio": 3}),
    ):
        table.add_column(name, **kw)  # fmt: skip
    assert cc.rendered is not None
    for e in cc.rendered.entries:
        text = clean(message_text(e.message), one_line=True, max_cells=160)
        style = "yellow" if e.reason.startswith(("masked", "cut")) else "cyan" if "summary" in e.reason else ""
        seq = "" if e.source_seq is None else str(e.source_seq)
        role = ROLE.get(type(e.message).__name__, "?")
        table.add_row(e.layer, seq, role, str(e.bytes), safe_text(e.reason, style, one_line=True), Text(text))
    return table


class ContextScreen(ActionScreen):
    """←/→ (or 1-9) pick the profile; Esc goes back."""

    FAILURE_PANELS: ClassVar[dict[str, str]] = {"profile": "#ctx-bar"}
    HELP_TITLE = "The last call's context"
    HELP_INTRO = (
        "The chat's last LLM call, message by message, as recorded or rebuilt under another profile "
        "(a what-if that assumes the same trajectory)."
    )
    ACTIONS = (
        Act("escape,q,f2", "back", "Back", "Go back to the chat.", "back close chat"),
        Act(
            "left", "shift(-1)", "Prev profile", "Show the call under the previous profile.", "profile", priority=True
        ),  # the scrolling body would take ← → for itself
        Act("right", "shift(1)", "Next profile", "Show the call under the next profile.", "profile", priority=True),
        Act("p", "use", "Use profile", "Use the shown profile for the chat's next turn.", "profile switch use"),
    )
    DEFAULT_CSS = """
    ContextScreen #ctx-head { padding: 0 1; background: $panel; height: auto; }
    ContextScreen #ctx-body { padding: 0 1; }
    """

    def __init__(self, session: ChatSession) -> None:
        super().__init__()
        self.session = session
        self.names = profile_names()
        self.index = self.names.index(session.profile)

    def compose(self) -> ComposeResult:
        yield Static(id="ctx-head")
        with VerticalScroll(id="ctx-body"):
            yield Static(id="ctx-bar")
            yield Static(id="ctx-table")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.render_profile()

    def action_back(self) -> None:
        self.dismiss()

    def action_shift(self, delta: int) -> None:
        self.index = (self.index + delta) % len(self.names)
        self.render_profile()

    def action_use(self) -> None:
        self.session.set_profile(self.names[self.index])
        self.notify(f"the next turn uses profile {self.names[self.index]}")
        self.render_profile()

    @work(exclusive=True, group="profile", exit_on_error=False)
    async def render_profile(self) -> None:
        s, name = self.session, self.names[self.index]
        head = self.query_one("#ctx-head", Static)
        tabs = Text("What would the last call have been under: ", style="bold")
        for i, n in enumerate(self.names):
            tabs.append(f" {n} ", style="reverse" if i == self.index else "")
        tabs.append(f"\n{s.knobs_of(name).describe()}", style="dim")
        if name == s.profile:
            tabs.append("  (the chat's current profile)", style="dim")
        head.update(tabs)
        call = await s.last_call()
        if call is None:
            self.query_one("#ctx-bar", Static).update(Text("no LLM call yet: send a message first", style="yellow"))
            return
        whatif = name != PROJECT_PROFILE
        cc = await s.context_of(call, s.knobs_of(name) if whatif else None)
        if cc is None or cc.rendered is None:
            self.query_one("#ctx-bar", Static).update(Text("this call's context cannot be rebuilt", style="red"))
            return
        d = call.event.kind
        recorded = getattr(d, "approx_context_chars", None)
        title = clean(f"call at {call.event.stream_id} seq {call.event.sequence}: recorded {format_size(recorded)}")
        title += f", rebuilt under {name} {format_size(cc.rendered.chars)}"
        bar = context_bar(cc.rendered, self.size.width - 4, title)
        if whatif:
            bar.append(f"\n{SAME_TRAJECTORY}; the project's knobs reproduce the recorded call", style="italic yellow")
        self.query_one("#ctx-bar", Static).update(bar)
        self.query_one("#ctx-table", Static).update(entries_table(cc))
