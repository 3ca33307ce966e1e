"""The knob editor: edit the five knobs (or pick a profile) and see, for the selected call, the
context the model would have received, diffed against what it did receive, and the stream's whole
curve under the new knobs. Every re-render replays the stream through the engine's ContextBuilder
in a thread worker, so typing never waits."""

from __future__ import annotations

import asyncio
import difflib
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult, RenderResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static
from textual.worker import get_current_worker

from zymi_tui.context.knobs import KNOB_NAMES, PROFILES, ContextKnobs, KnobError, user_profiles
from zymi_tui.context.tokens import load_encoding
from zymi_tui.events.store import EventReader
from zymi_tui.project.reader import PROJECT_FILE
from zymi_tui.replay.call_context import SAME_TRAJECTORY, CallContext
from zymi_tui.replay.compare import knob_dict
from zymi_tui.replay.profiles_io import (
    ProfileFileError,
    ProjectEdit,
    apply_edit,
    plan_apply,
    runtime_context_block,
    save_profile,
)
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.tui.actions import Act, ActionModal, ActionScreen, Nav
from zymi_tui.tui.safe_text import clean, safe_text
from zymi_tui.tui.tuning.collector import EditCollector
from zymi_tui.tui.tuning.curve_view import CurveView
from zymi_tui.tui.tuning.diff_table import DiffTable
from zymi_tui.tui.tuning.model import CallDiff, Curve, KnobForm, curve, diff_contexts, prepare_recorded
from zymi_tui.tui.tuning.whatif import MemoryReader, StreamWhatIf, gc_paused, load_run, replay_stream
from zymi_tui.tui.widgets import FittingFooter

RECORDED = "recorded"
PENDING_NOTICE_S = 0.1  # a running what-if says so after this long (if its picked call is not drawn yet)
PAINT_WAIT_S = 0.25  # the longest a what-if waits for its picked call's frame before going on
PICK_HERE_S = 0.025  # the picked call's what-if is made on the UI thread if it took at most this long last time
PICK_HERE_MAX_S = 0.1  # and given up there (then made by the worker) if it takes longer than this
MAX_ROWS = 120  # rows of the message tables (a long stream has thousands of messages)
Row = tuple[str, str, str, str, str, str, str]  # a diff table row, as display text (`clean`)
DIFF_LABELS = ("change", "layer", "seq", "role", "bytes", "Δ", "why")
STATUS_STYLE = {"added": "green", "dropped": "red", "compacted": "magenta", "masked": "yellow",
                "unmasked": "cyan", "changed": "blue"}  # fmt: skip


class Quiet(Static):
    """A Static that lays the screen out again only when its height changes (`Static.update` always
    does, and each layout re-renders every widget of the screen: 5 layouts per knob edit cost more UI
    time than the what-if itself); an update to the same text does nothing."""

    def __init__(self, content: str = "", **kw: str) -> None:
        super().__init__(content, **kw)  # type: ignore[arg-type]
        self.shown: Text | str = content
        self.fit = (-1, -1)  # (width, height) of the text shown (-1: not known yet)
        self.grown = False  # shown last with grow_only
        self.pinned = False  # its height is set here (since a grow_only show), not by its CSS
        self.painted: list[Callable[[], object]] = []  # to call once the text shown is on screen

    def show(self, text: Text | str, *, grow_only: bool = False, then: Callable[[], object] | None = None) -> None:
        """`grow_only`: the height never shrinks (a knob's error line: it stays, blank, once the
        error is fixed, so that the digit that fixes it does not move the column under it; the
        summary while the knobs stay edited); a later show without it fits the text again.
        `then` is called after the frame that paints the text (at once if it is on screen already)."""
        width = self.content_size.width
        if text == self.shown and self.fit[0] == width and grow_only == self.grown:
            if then is not None:
                then()
            return
        if then is not None:
            self.painted.append(then)
        body = text if isinstance(text, Text) else Text(text)
        lines = (len(body.wrap(self.app.console, width)) if body.plain else 0) if width > 0 else -1
        if lines >= 0 and (self.pinned or (grow_only and self.fit[0] == width)):
            if grow_only and self.fit[0] == width:
                lines = max(lines, self.fit[1])
            self.styles.height = lines
            self.pinned = True
        self.update(text, layout=lines < 0 or (width, lines) != self.fit)
        self.shown, self.fit, self.grown = text, (width, lines), grow_only

    def render(self) -> RenderResult:
        # called while a frame is made: what waits for this text is called once that frame is done
        # (`call_after_refresh` from a handler may run before the frame: the widgets' repaints reach
        # the screen from their own message queues, after it)
        for then in self.painted:
            self.call_after_refresh(then)
        self.painted.clear()
        return super().render()


class KnobInput(Input):
    """A knob's field. Every change of its value goes to `typed` at once, within the key's handling,
    so what the screen draws for it joins the frame that shows the key (`Input.Changed` arrives after
    that frame, and the figures would wait for the screen's next update). Textual's Input sets its
    virtual size to its text's width on every keystroke, and a new virtual size lays the whole screen
    out; here it is at least the field's width, so a value that fits changes nothing (figures:
    docs/performance-notes.md)."""

    def __init__(self, value: str, typed: Callable[[str, str], object], *, knob: str) -> None:
        self.typed, self.knob = typed, knob
        super().__init__(value, id=f"knob-{knob}", classes="knob")

    def watch_value(self, value: str) -> None:
        self.typed(self.knob, value)

    async def _on_key(self, event: events.Key) -> None:
        """The field's own bound keys (backspace, delete, arrows…) run here, in order with the typed
        characters: Textual runs them once the key has bubbled up to the app, so a character that came
        in the same read (or while an edit was being drawn) was inserted first (textual#6605)."""
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)

    @property
    def content_width(self) -> int:
        return max(super().content_width, self.scrollable_content_region.width)


class WhatIfReady(Message):
    """A finished what-if replay (posted from the worker thread)."""

    def __init__(self, knobs: ContextKnobs, calls: list[CallContext], diff: CallDiff | None, ms: float) -> None:
        super().__init__()
        self.knobs, self.calls, self.diff, self.ms = knobs, calls, diff, ms


class WhatIfPicked(Message):
    """The picked call's exact what-if and its diff, known before the rest of the stream (posted from
    the worker thread as soon as the replay has passed that call). `painted` is set once it is on
    screen (or dropped): the worker makes the other calls' rows only then, so that it does not take
    the interpreter from the frame that shows this one."""

    def __init__(self, knobs: ContextKnobs, diff: CallDiff, reached_s: float) -> None:
        super().__init__()
        self.knobs, self.diff, self.reached_s = knobs, diff, reached_s  # reached: the worker's time to the call
        self.painted = threading.Event()


class WhatIfPartial(Message):
    """The calls of a what-if replay so far (posted from the worker thread as they come)."""

    def __init__(self, knobs: ContextKnobs, calls: list[CallContext]) -> None:
        super().__init__()
        self.knobs, self.calls = knobs, calls


class ConfirmApply(ActionModal):
    """Shows the change to project.yml; writes it (with a backup) only on `y`."""

    HELP_TITLE = "Apply to project.yml"
    ACTIONS = (
        Act("y", "answer(True)", "Write it", "Write the knobs into project.yml (after a backup).", "yes write apply"),
        Act("n,escape", "answer(False)", "Cancel", "Leave project.yml unchanged.", "no cancel"),
    )

    def __init__(self, edit: ProjectEdit) -> None:
        super().__init__()
        self.edit = edit

    def compose(self) -> ComposeResult:
        diff = difflib.unified_diff(
            self.edit.old_text.splitlines(), self.edit.new_text.splitlines(), str(self.edit.path), "edited", lineterm=""
        )
        with Vertical(id="confirm"):
            yield Label(
                safe_text(f"Apply these knobs to {self.edit.path}? A backup is written first.  [y] write  [n] cancel")
            )
            with VerticalScroll():
                yield Static(safe_text("\n".join(diff) or "(no change)"), id="confirm-diff")
            with Horizontal():
                yield Button("Write (y)", id="yes", variant="warning")
                yield Button("Cancel (n)", id="no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class KnobsPanel(VerticalScroll, can_focus=False, inherit_bindings=False):
    """The knobs, scrolled to the focused one (Tab) or by the mouse; no keys of its own: PgUp/PgDn in a
    knob stay the screen's (the previous / next call)."""


class TuningScreen(ActionScreen):
    """Knob editor for one step stream; `sequence` picks the call first shown (default: the last)."""

    CSS_PATH = str(Path(__file__).with_name("tuning.tcss"))
    HAS_INPUT = True
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]  # noqa: RUF012  (tuning.tcss)
    FAILURE_PANELS: ClassVar[dict[str, str]] = {"load": "#summary", "whatif": "#summary"}
    HELP_TITLE = "Knob editor"
    HELP_INTRO = (
        "Edit the five knobs (or pick a profile) and see, for the picked call, the context the model "
        "would have received, diffed against what it did receive, and the stream's whole curve under "
        "the new knobs. Every figure of the what-if is estimated and assumes the same trajectory."
    )
    NAV = (Nav("Tab / Shift+Tab", "next / previous knob"),)
    ACTIONS = (
        Act("pageup", "pick(-1)", "Prev call", "Pick the previous LLM call of the stream.", "previous call pick"),
        Act("pagedown", "pick(1)", "Next call", "Pick the next LLM call of the stream.", "next call pick"),
        Act("ctrl+z", "undo", "Undo", "Undo the last knob edit.", "undo revert"),
        Act("ctrl+r", "reset", "Reset", "Back to the recorded knobs.", "reset recorded"),
        Act(
            "ctrl+s",
            "save",
            "Save profile",
            "Save the knobs as a named profile (type the name first).",
            "save profile name",
        ),
        Act(
            "ctrl+o",
            "export",
            "Export",
            "Show and copy the runtime.context block for project.yml.",
            "export yaml block copy runtime context",
        ),
        Act(
            "ctrl+t",
            "apply",
            "Apply",
            "Write the knobs into the project's project.yml (asks first, backs up).",
            "apply project write save yml",
        ),
        Act("escape", "close", "Back", "Close the editor.", "back close"),
    )

    def __init__(
        self,
        reader: EventReader,
        stream_id: str,
        *,
        project: Path | None,
        sequence: int | None = None,
        knobs: ContextKnobs | None = None,  # opened with these knobs applied (an advice's recommendation)
    ):
        super().__init__()
        self.reader, self.stream_id, self.project, self.want_seq = reader, stream_id, project, sequence
        self.initial = knobs
        self.recorded = recorded_knobs(project)
        self.form = KnobForm(self.recorded)
        self.memory: MemoryReader | None = None
        self.whatif: StreamWhatIf | None = None  # the exact what-if, re-run on every edit
        self.partial: list[CallContext] | None = None  # the calls of the running what-if so far
        self.recorded_calls: list[CallContext] = []
        self.what_if_calls: list[CallContext] | None = None
        self.diff: CallDiff | None = None
        self.picked = 0  # index into the agent calls
        self.last_ms: float | None = None
        self.started = 0.0
        self.redraw_ms: float | None = None  # edit -> exact what-if drawn (curve included)
        self.picked_ms: float | None = None  # edit -> the picked call's exact what-if drawn
        self.pick_s: float | None = None  # the last what-if's time to the picked call (None: not known yet)
        self.diff_knobs: ContextKnobs | None = None  # the knobs `diff` was made under
        self.pending = False  # the exact what-if of the stream is on its way
        self.curve: Curve | None = None
        self._syncing = False
        self.errors_due = False  # the knobs' errors and state are to be drawn with the summary
        self._agents: dict[int, tuple[list[CallContext], int, list[CallContext]]] = {}  # see agent_calls
        self.drawn: tuple[CallDiff | None, int] | None = None  # the diff the table shows, for the call picked
        self.collector = EditCollector(self.set_timer)  # the cyclic collector held around each edit
        self.profiles: dict[str, ContextKnobs] = dict(PROFILES)
        try:
            self.profiles.update(user_profiles())
        except KnobError as e:
            self.profile_error = str(e)
        else:
            self.profile_error = ""

    # -- layout ---------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        options = [("recorded (project)", RECORDED)] + [(name, name) for name in self.profiles]
        with Horizontal():
            with KnobsPanel(id="knobs"):  # every knob reachable on a short terminal (Tab scrolls to it)
                yield Label("profile")
                yield Select(options, value=RECORDED, allow_blank=False, id="profile")
                for name in KNOB_NAMES:
                    yield Label(name)
                    yield KnobInput(self.form.texts[name], self.knob_typed, knob=name)
                    yield Quiet("", id=f"err-{name}", classes="knob-error")
                yield Quiet("", id="state")
                yield Input(placeholder="save as profile… (type a name, then ctrl+s)", id="profile-name")
                yield Static("", id="export")
            with Vertical(id="view"):
                yield Static(Text(f"⚠ {SAME_TRAJECTORY}", style="bold yellow"), id="caveat")
                yield CurveView(id="curve")
                yield Quiet("loading…", id="summary")
                yield Quiet("", id="elapsed")
                yield Quiet("", id="diff-title")
                yield DiffTable(DIFF_LABELS, STATUS_STYLE, id="diff")
        yield FittingFooter()

    def on_unmount(self) -> None:
        self.collector.close()

    def on_mount(self) -> None:
        self.sub_title = self.stream_id
        if self.profile_error:
            self.notify(self.profile_error, severity="warning")
        self.load()

    @work(exclusive=True, group="load", exit_on_error=False)
    async def load(self) -> None:
        self.memory = await load_run(self.reader, self.stream_id)
        self.whatif = await asyncio.to_thread(StreamWhatIf, self.memory, self.project, self.stream_id)
        if self.whatif.recorded != self.recorded:  # a foreign agent's step: its own policy is the recorded
            self.recorded = self.whatif.recorded
            self.form.load(self.recorded, remember=False)
            self.sync_inputs()
        self.recorded_calls = await replay_stream(self.memory, self.project, self.stream_id, None)
        agents = self.agent_calls(self.recorded_calls)
        seqs = [c.sequence for c in agents]
        self.picked = seqs.index(self.want_seq) if self.want_seq in seqs else max(0, len(seqs) - 1)
        self.redraw()
        if self.initial is not None and self.initial != self.recorded:
            self.form.load(self.initial)
            self.sync_inputs()
            self.recompute()
        if self.whatif.forkable:
            await asyncio.to_thread(self.whatif.base)  # before the first edit needs it
        await asyncio.to_thread(load_encoding)  # the first edit's diff estimates tokens
        picked = self.picked_call(self.recorded_calls)
        if picked is not None and picked.rendered is not None:
            await asyncio.to_thread(prepare_recorded, picked.rendered)
        self.collector.keep_loaded()

    # -- state ----------------------------------------------------------------------------------
    def agent_calls(self, calls: list[CallContext]) -> list[CallContext]:
        """The agent calls among `calls` (remembered for the last three lists asked, by identity and
        length: the recorded calls, the what-if's and the running one's are asked for on every draw,
        thousands of rows on a long stream)."""
        if not calls:
            return []  # (not remembered: an empty list asked for would push a long one out)
        hit = self._agents.get(id(calls))
        if hit is None or hit[0] is not calls or hit[1] != len(calls):
            if len(self._agents) > 2:  # the oldest asked goes (the recorded calls are asked on every draw)
                self._agents.pop(next(iter(self._agents)))
            agents = [c for c in calls if not c.is_compaction and not c.hard_cap_failure]
            hit = (calls, len(calls), agents)
        self._agents.pop(id(calls), None)
        self._agents[id(calls)] = hit  # last asked: kept longest
        return hit[2]

    def retire(self, *lists: list[CallContext] | None) -> None:
        """Lists of rows about to be replaced on screen: let go of after the next frame (freeing a
        what-if's thousands of rows takes the UI thread a while, which then came before the frame
        showing the new what-if, wherever the last reference went)."""
        kept = [calls for calls in lists if calls]
        if not kept:
            return

        def drop() -> None:
            for calls in kept:
                hit = self._agents.get(id(calls))
                if hit is not None and hit[0] is calls:
                    del self._agents[id(calls)]
            kept.clear()

        self.call_after_refresh(drop)

    def picked_call(self, calls: list[CallContext] | None) -> CallContext | None:
        if calls is None:
            return None
        agents = self.agent_calls(self.recorded_calls)
        if not agents:
            return None
        seq = agents[min(self.picked, len(agents) - 1)].sequence
        return next((c for c in reversed(self.agent_calls(calls)) if c.sequence == seq), None)

    @property
    def ready(self) -> bool:
        return self.whatif is not None

    # -- editing --------------------------------------------------------------------------------
    def knob_typed(self, name: str, value: str) -> None:
        """A knob's field changed (called by the field, within the key's handling)."""
        if self._syncing or value == self.form.texts.get(name):
            return  # set by sync_inputs, or as it was: nothing changed
        knobs = self.form.set(name, value)
        # the knobs' errors and state are shown with the what-if's first figures: a frame of their own
        # before those took the interpreter from the what-if
        self.errors_due = True
        if knobs is None or not self.recompute():
            self.show_errors()

    @on(Select.Changed, "#profile")
    def profile_changed(self, event: Select.Changed) -> None:
        value = str(event.value)
        knobs = self.recorded if value == RECORDED else self.profiles[value]
        if knobs == self.form.knobs and not self.form.errors:
            return  # (also the echo of the select set by a reset)
        self.form.load(knobs)
        self.sync_inputs()
        self.recompute()

    def sync_inputs(self) -> None:
        self._syncing = True
        try:
            for name in KNOB_NAMES:
                self.query_one(f"#knob-{name}", Input).value = self.form.texts[name]
        finally:
            self._syncing = False
        self.show_errors()

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

    def recompute(self) -> bool:
        """The what-if of the knobs in the form, started; whether it runs (else it is drawn already)."""
        knobs = self.form.knobs
        if knobs is None or not self.ready:
            return False
        if knobs == self.recorded:
            self.retire(self.what_if_calls, self.partial)
            self.what_if_calls, self.diff, self.diff_knobs, self.last_ms, self.pending = None, None, None, None, False
            self.partial = None
            self.workers.cancel_group(self, "whatif")
            self.redraw(then=self.collector.release)
            return False
        self.collector.hold()
        self.started = time.perf_counter()
        self.pending, self.partial = True, []
        diff = self.picked_here(knobs)
        if diff is None:
            self.run_whatif(knobs)
            # "replaying…" only if the picked call is not known by then: a figures-only what-if knows it
            # within a frame or two, and drawing the notice first cost a frame on the way to its figures
            self.set_timer(PENDING_NOTICE_S, self.show_summary)
            return True
        painted = threading.Event()
        self.show_picked(knobs, diff, then=painted.set)
        self.run_whatif(knobs, (diff, painted))
        return True

    def picked_here(self, knobs: ContextKnobs) -> CallDiff | None:
        """The picked call's what-if and its diff, made on the UI thread while the key that changed the
        knobs is being handled, so that its figures are in the frame that shows the key; None (the
        worker makes it) when the last what-if took longer than `PICK_HERE_S` to get there (`pick_s`),
        or this one does not within `PICK_HERE_MAX_S` (a loaded machine can double the time: giving
        up at the same bound wasted it, and the worker started from nothing)."""
        before = self.picked_call(self.recorded_calls)
        if self.whatif is None or before is None or before.rendered is None:
            return None
        if self.pick_s is not None and self.pick_s > PICK_HERE_S:
            return None
        t0 = time.perf_counter()
        try:
            with gc_paused():  # (a collection's walk over the loaded run would cost more than the work)
                after = self.whatif.call_at(knobs, before.sequence, within_s=PICK_HERE_MAX_S)
                reached = time.perf_counter() - t0
                if after is None or after.rendered is None:
                    self.pick_s = math.inf
                    return None
                diff = diff_contexts(before.rendered, after.rendered)
        except Exception:  # the worker makes the same what-if, and shows its failure where failures go
            self.pick_s = math.inf
            return None
        self.pick_s = reached
        return diff

    @work(thread=True, exclusive=True, group="whatif", exit_on_error=False, description="the stream's what-if")
    def run_whatif(self, knobs: ContextKnobs, known: tuple[CallDiff, threading.Event] | None = None) -> None:
        """The exact what-if of the whole stream; stops as soon as a newer edit arrives (the worker is
        cancelled, or the form holds other knobs), posting its calls to the plot as they come, and the
        picked call's diff first. `known`: that diff is made already, and on screen once the event is
        set (the worker waits for it, so that it does not take the interpreter from that frame)."""
        assert self.whatif is not None
        worker = get_current_worker()
        diff: CallDiff | None = None
        if known is not None:
            diff = known[0]
            known[1].wait(PAINT_WAIT_S)
        t0 = time.perf_counter()
        before = self.picked_call(self.recorded_calls)

        def picked(after: CallContext) -> None:  # the picked call is known: drawn before the rest
            nonlocal diff
            if before is not None and before.rendered is not None and after.rendered is not None:
                reached = time.perf_counter() - t0
                diff = diff_contexts(before.rendered, after.rendered)
                message = WhatIfPicked(knobs, diff, reached)
                self.post_message(message)
                message.painted.wait(PAINT_WAIT_S)

        calls = self.whatif.run(
            knobs,
            stop=lambda: worker.is_cancelled or self.form.knobs != knobs,
            partial=lambda rows: self.post_message(WhatIfPartial(knobs, rows)),
            want=None if before is None or known is not None else before.sequence,
            on_want=picked,
        )
        if calls is None:
            return
        self.post_message(WhatIfReady(knobs, calls, diff, (time.perf_counter() - t0) * 1000))

    def on_what_if_picked(self, message: WhatIfPicked) -> None:
        self.pick_s = message.reached_s
        if message.knobs != self.form.knobs or not self.pending:
            message.painted.set()
            return
        self.show_picked(message.knobs, message.diff, then=message.painted.set)

    def show_picked(self, knobs: ContextKnobs, diff: CallDiff, *, then: Callable[[], object]) -> None:
        """The picked call's what-if, drawn before the rest of the stream is known; `then` once on screen."""
        self.diff, self.diff_knobs = diff, knobs
        self.show_summary(then=then)
        self.draw_diff()
        self.picked_ms = (time.perf_counter() - self.started) * 1000  # edit -> picked call drawn

    def on_what_if_partial(self, message: WhatIfPartial) -> None:
        if message.knobs != self.form.knobs or not self.pending:
            return
        self.partial = message.calls
        self.draw_curve(self.form.knobs, message.calls, partial=True)
        self.query_one("#elapsed", Quiet).show(Text(self.progress_text(), style="dim"))

    def on_what_if_ready(self, message: WhatIfReady) -> None:
        if message.knobs != self.form.knobs:
            return  # a newer edit is on its way
        self.retire(self.what_if_calls, self.partial)
        self.what_if_calls, self.diff, self.last_ms, self.pending = message.calls, message.diff, message.ms, False
        self.diff_knobs = message.knobs
        self.partial = None
        self.redraw(then=self.collector.release)
        self.redraw_ms = (time.perf_counter() - self.started) * 1000  # edit -> redrawn (the benchmark reads it)

    # -- drawing --------------------------------------------------------------------------------
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

    # -- actions --------------------------------------------------------------------------------
    def action_close(self) -> None:
        self.dismiss(None)

    def action_pick(self, delta: int) -> None:
        n = len(self.agent_calls(self.recorded_calls))
        if not n:
            return
        self.picked = max(0, min(n - 1, self.picked + delta))
        self.pick_s = None  # another call: another time to reach it
        if self.pending and self.form.knobs is not None:
            self.run_whatif(self.form.knobs)  # started again, for this call first
        elif self.what_if_calls is not None:
            before, after = self.picked_call(self.recorded_calls), self.picked_call(self.what_if_calls)
            self.diff = None
            if before and after and before.rendered is not None and after.rendered is not None:
                self.diff = diff_contexts(before.rendered, after.rendered)
        self.redraw()

    def action_undo(self) -> None:
        self.form.undo()
        self.sync_inputs()
        self.recompute()

    def action_reset(self) -> None:
        self.form.reset()
        self.query_one("#profile", Select).value = RECORDED
        self.sync_inputs()
        self.recompute()

    def action_save(self) -> None:
        name = self.query_one("#profile-name", Input).value.strip()
        if self.form.knobs is None:
            self.notify("fix the knobs first", severity="error")
            return
        try:
            path = save_profile(name, knob_dict(self.form.knobs), reserved=(*PROFILES, RECORDED))
        except ProfileFileError as e:
            self.notify(str(e), severity="error")
            return
        self.profiles[name] = self.form.knobs
        self.notify(f"saved profile `{name}` in {path}")

    def action_export(self) -> None:
        if self.form.knobs is None:
            return
        block = runtime_context_block(knob_dict(self.form.knobs))
        self.query_one("#export", Static).update(safe_text(block))
        self.app.copy_to_clipboard(block)
        self.notify("runtime.context block shown and copied")

    def action_apply(self) -> None:
        if self.form.knobs is None or self.project is None:
            self.notify(
                "no project.yml to apply to" if self.project is None else "fix the knobs first", severity="error"
            )
            return
        try:
            edit = plan_apply(self.project / PROJECT_FILE, knob_dict(self.form.knobs))
        except ProfileFileError as e:
            self.notify(str(e), severity="error")
            return

        def done(yes: bool | None) -> None:
            if not yes:
                self.notify("project.yml left unchanged")
                return
            try:
                backup = apply_edit(edit)
            except ProfileFileError as e:
                self.notify(str(e), severity="error")
                return
            self.notify(f"wrote {edit.path} (backup: {backup})")

        self.app.push_screen(ConfirmApply(edit), done)
