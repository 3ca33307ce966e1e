"""The knob editor's parts: its quiet text panels and knob fields, the messages its what-if worker posts,
and the confirmation asked before project.yml is written."""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult, RenderResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, Static

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.profiles_io import ProjectEdit
from zymi_tui.tui.actions import Act, ActionModal
from zymi_tui.tui.safe_text import safe_text
from zymi_tui.tui.tuning.model import CallDiff


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
