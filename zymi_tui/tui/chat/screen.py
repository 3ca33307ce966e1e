"""The chat screen: the conversation, the prompt, and beside them this chat's context curve and bar.

Each message runs one turn of the project's chat pipeline in a worker; the engine writes every
event to the store and the session's listener hands it to the screen as it is written, so the
turn, the curve and the event count grow while the model works. Esc cancels the turn (sealed in
the store), F2 shows the last call's context under any profile, F3 switches the profile for the
next turn, F4 opens the dashboard on this store, F5 the knob editor on the last call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState

from zymi_tui.engine.chat import PROJECT_PROFILE, next_profile, profile_names
from zymi_tui.engine.slash import help_text, parse_slash, unknown_command
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui.actions import Act, ActionScreen, Nav
from zymi_tui.tui.chat.context_view import ContextScreen
from zymi_tui.tui.chat.session import ChatSession
from zymi_tui.tui.chat.transcript import Transcript
from zymi_tui.tui.chat.widgets import PromptInput, TurnView, context_bar
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.model import format_size
from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.state.plot import collect_calls

REDRAW_S = 0.2  # turn views: at most this often
REPLOT_S = 1.0  # the plot while a turn runs (a plot render costs ~0.1 s); at once when it ends
FIRST_HINT = (
    "send a few messages, then press F2 to see the context (F3 switches the profile, F5 tunes the knobs, "
    "Esc cancels a turn)"
)


class ChatScreen(ActionScreen):
    CSS_PATH = str(Path(__file__).with_name("chat.tcss"))
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (90, "-wide")]  # noqa: RUF012
    HAS_INPUT = True
    FAILURE_PANELS: ClassVar[dict[str, str]] = {"side": "#chat-bar"}
    HELP_TITLE = "Chat"
    HELP_INTRO = (
        "Each message runs one turn of the project's chat pipeline; every event is written to the store "
        "as it happens, and the curve beside the conversation grows with it. Commands typed in the "
        "prompt: /profile [NAME], /context, /help, /quit."
    )
    NAV = (Nav("↑ ↓ (prompt)", "the messages you sent before"),)
    ACTIONS = (
        Act(
            "f2",
            "context",
            "Context",
            "The last call's context, message by message, under any profile.",
            "context messages inspect what-if profile",
        ),
        Act("f3", "next_profile", "Profile", "Switch the knob profile for the next turn.", "profile switch knobs"),
        Act(
            "f4",
            "dashboard",
            "Dashboard",
            "Open the dashboard on this chat's store (F4 there comes back).",
            "dashboard observe runs events back",
        ),
        Act(
            "f5",
            "tune",
            "Tune knobs",
            "The knob editor on the last call: what it would have been.",
            "tune knobs what-if edit",
        ),
        Act(
            "escape",
            "cancel_turn",
            "Cancel turn",
            "Cancel the running turn (recorded as cancelled).",
            "cancel stop interrupt",
        ),
        Act("ctrl+l", "focus_prompt", "Prompt", "Put the cursor back in the message box.", "prompt focus type"),
    )

    def __init__(
        self,
        session: ChatSession,
        *,
        hint: str | None = None,
        hosted: bool = False,
        dashboard: Callable[[ChatSession], Screen[None]] | None = None,
    ) -> None:
        """`hosted`: pushed over another screen (the dashboard), which F4 goes back to, closing the session.
        `dashboard`: what F4 opens when not hosted (the dashboard on the chat's store)."""
        super().__init__()
        self.session = session
        self.hosted = hosted
        self.dashboard = dashboard
        self.transcript = Transcript(session.stream)
        self.events: list[StoredEvent] = []
        self.views: dict[int, TurnView] = {}
        self.turn_worker: Worker[None] | None = None
        self.hint = hint
        self.plot_dirty = False
        self.plotted_at = 0.0
        self.dirty: set[int] = set()

    # -- layout ------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="chat-body"):
            with Vertical(id="chat-left"):
                yield Static(id="chat-header")
                yield VerticalScroll(id="conversation")
                yield Static(id="chat-hint")
                yield PromptInput(placeholder="message (Enter sends, ↑ history, /help)", id="prompt")
            with Vertical(id="chat-side"):
                yield ContextPlot(id="chat-plot")
                yield Static(id="chat-bar")
        yield FittingFooter()

    async def on_mount(self) -> None:
        self.session.listeners.append(self._on_event)
        for se in await self.session.history():
            self._take(se)
        self._header()
        self._say(self.hint or (FIRST_HINT if not self.transcript.turns else "resumed: the agent remembers this chat"))
        self.query_one("#prompt", PromptInput).focus()
        self._replot()
        self.refresh_side()
        self.set_interval(REDRAW_S, self._redraw)

    async def on_unmount(self) -> None:
        if self._on_event in self.session.listeners:
            self.session.listeners.remove(self._on_event)
        if self.hosted:  # the host app quits with the chat open
            await self.session.close()

    # -- events ------------------------------------------------------------------------------------
    def _on_event(self, se: StoredEvent) -> None:
        self._take(se)
        self.plot_dirty = True

    def _take(self, se: StoredEvent) -> None:
        if not self.transcript.belongs(se):
            return
        self.events.append(se)
        turn = self.transcript.add(se)
        if turn is None:
            return
        if id(turn) not in self.views:
            view = self.views[id(turn)] = TurnView(turn)
            box = self.query_one("#conversation", VerticalScroll)
            box.mount(view)
            box.scroll_end(animate=False)
        else:
            self.dirty.add(id(turn))

    def _redraw(self, *, force: bool = False) -> None:
        """Bring the turn views and the plot up to date (throttled: events land faster than frames)."""
        if self.dirty:
            for key in self.dirty:
                view = self.views[key]
                if view.is_mounted and view.children:
                    view.refresh_turn()
            self.dirty.clear()
            self.query_one("#conversation", VerticalScroll).scroll_end(animate=False)
        now = time.monotonic()
        if self.plot_dirty and (force or not self.busy or now - self.plotted_at >= REPLOT_S):
            self.plot_dirty = False
            self.plotted_at = now
            self._replot()

    def _replot(self) -> None:
        plot = self.query_one("#chat-plot", ContextPlot)
        knobs = self.session.knobs
        plot.soft_cap, plot.hard_cap = knobs.soft_cap_chars, knobs.hard_cap_chars
        t0 = self.events[0].event.timestamp_ns if self.events else 0
        plot.set_data(collect_calls(self.events, knobs.observation_window, knobs.forget_after_turns), t0)

    # -- header, hint, side ------------------------------------------------------------------------
    def _header(self) -> None:
        s = self.session
        t = Text()
        t.append("chat ", style="bold")
        t.append(clean(f"stream {s.stream} · "))
        t.append(clean(s.model_label), style="bold cyan")
        if s.is_demo:
            t.append(" (offline demo model: no API key, nothing from a real LLM)", style="dim")
        t.append(f"\nprofile {s.profile}: {s.knobs.describe()}", style="dim")
        self.query_one("#chat-header", Static).update(t)

    def _say(self, text: str, style: str = "dim") -> None:
        self.query_one("#chat-hint", Static).update(safe_text(text, style))

    @work(exclusive=True, group="side", exit_on_error=False)
    async def refresh_side(self) -> None:
        """The bar: the last call's context rebuilt under the current profile's knobs."""
        bar = self.query_one("#chat-bar", Static)
        call = await self.session.last_call()
        if call is None:
            bar.update(Text("no LLM call yet: the bar shows the last call's context", style="dim"))
            return
        s = self.session
        knobs = None if s.profile == PROJECT_PROFILE else s.knobs
        cc = await s.context_of(call, knobs)
        if cc is None or cc.rendered is None:
            bar.update(Text("the last call's context cannot be rebuilt (no project prefix)", style="dim"))
            return
        under = "as recorded" if knobs is None else f"under profile {s.profile} (same trajectory assumed)"
        title = f"last call (seq {call.event.sequence}) {under}"
        bar.update(context_bar(cc.rendered, bar.size.width or 40, title))

    # -- sending -----------------------------------------------------------------------------------
    @on(Input.Submitted, "#prompt")
    def submit(self, event: Input.Submitted) -> None:
        box = self.query_one("#prompt", PromptInput)
        text = event.value
        if not text.strip():
            self._say("empty message: nothing sent (type something, then Enter)", "yellow")
            return
        if text.strip().startswith("/") and self._command(text.strip()):
            box.value = ""
            return
        if self.busy:
            self._say("a turn is running: wait for its answer, or Esc to cancel it (your text is kept)", "yellow")
            return
        box.remember(text)
        box.value = ""
        size, hard = len(text.encode("utf-8")), self.session.knobs.hard_cap_chars
        if size > hard:
            self._say(f"sent {format_size(size)}, over the hard cap ({format_size(hard)}): recorded whole, but the "
                      "engine refuses to build a context that large, as zymi does", "yellow")  # fmt: skip
        else:
            self._say("running… (Esc cancels)", "yellow")
        self.turn_worker = self.run_turn(text)

    @property
    def busy(self) -> bool:
        w = self.turn_worker
        return w is not None and w.state in (WorkerState.PENDING, WorkerState.RUNNING)

    @work(exclusive=True, group="turn", exit_on_error=False, description="a chat turn")
    async def run_turn(self, text: str) -> None:
        ok, answer = await self.session.send(text)
        self._redraw(force=True)
        if ok:
            self._say("done. F2: the context of the last call · F3: switch profile")
        else:
            self._say(f"the turn failed: {answer.splitlines()[0] if answer else 'no answer'}", "red")
        self.refresh_side()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.turn_worker:
            return
        if event.state in (WorkerState.CANCELLED, WorkerState.ERROR):
            self._redraw(force=True)
        if event.state == WorkerState.CANCELLED:
            self._say("turn cancelled: the store records it as cancelled by the user", "magenta")
            self.refresh_side()
        elif event.state == WorkerState.ERROR:
            self._say(f"the turn stopped: {event.worker.error}", "red")
            self.refresh_side()

    async def stop_turn(self) -> None:
        """Cancel the running turn and wait until the store has its end (for quitting)."""
        w = self.turn_worker
        if w is not None and w.state in (WorkerState.PENDING, WorkerState.RUNNING):
            w.cancel()
            with contextlib.suppress(Exception):  # a cancelled or failed worker is what we waited for
                await w.wait()

    def show_help(self) -> None:
        """The commands, in the conversation (one copy, at its end): pop-up notices stacked over the transcript
        at each /help and hid it."""
        conversation = self.query_one("#conversation", VerticalScroll)
        for old in conversation.query(".help-note"):
            old.remove()
        conversation.mount(Static(safe_text(help_text(profile_names()), "dim"), classes="help-note"))
        conversation.scroll_end(animate=False)

    def action_cancel_turn(self) -> None:
        if self.busy and self.session.answered:  # Esc as the answer lands: the turn finished, it is only closing
            self._say("the answer is in: the turn is closing, nothing to cancel")
        elif self.busy and self.turn_worker is not None:
            self.turn_worker.cancel()
        else:
            self._say("nothing to cancel")

    def _command(self, line: str) -> bool:
        """A slash command (engine.slash parses them for both chats); False: the line is a message."""
        slash = parse_slash(line)
        if slash is None:
            return False
        if slash.command == "quit":
            self.app.call_later(self.app.run_action, "quit_chat")
        elif slash.command == "profile":
            self.switch_profile(slash.arg or None)
        elif slash.command == "context":
            self.action_context()
        elif slash.command == "help":
            self._say(FIRST_HINT)
            self.show_help()
        else:
            self._say(unknown_command(slash), "yellow")
        return True

    # -- knobs -------------------------------------------------------------------------------------
    def switch_profile(self, name: str | None) -> None:
        names = profile_names()
        if name is None:
            name = next_profile(self.session.profile)
        if name not in names:
            self._say(f"unknown profile {name!r}; profiles: {', '.join(names)}", "red")
            return
        self.session.set_profile(name)
        self._header()
        when = " (from the next turn)" if self.busy else ""
        self._say(f"profile {name}{when}: {self.session.knobs.describe()}", "cyan")
        self._replot()
        self.refresh_side()

    def action_next_profile(self) -> None:
        self.switch_profile(None)

    def action_context(self) -> None:
        self.app.push_screen(ContextScreen(self.session))

    @work(exclusive=True, group="tune", exit_on_error=False)
    async def action_tune(self) -> None:
        """The tuning issue's knob editor on this chat's last call (what it would have been under other knobs)."""
        from zymi_tui.tui.tuning.editor import TuningScreen

        call = await self.session.last_call()
        if call is None:
            self._say("no LLM call yet: send a message first, then F5 tunes its context", "yellow")
            return
        s = self.session
        self.app.push_screen(
            TuningScreen(s.rt.reader, call.event.stream_id, project=s.ws.root, sequence=call.event.sequence)
        )

    async def action_dashboard(self) -> None:
        if self.hosted:
            await self.stop_turn()
            await self.session.close()
            self.dismiss()
            return
        if self.dashboard is not None:
            self.app.push_screen(self.dashboard(self.session))

    def action_focus_prompt(self) -> None:
        self.query_one("#prompt", PromptInput).focus()
