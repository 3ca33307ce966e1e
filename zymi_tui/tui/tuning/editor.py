"""The knob editor: edit the five knobs (or pick a profile) and see, for the selected call, the
context the model would have received, diffed against what it did receive, and the stream's whole
curve under the new knobs. Every re-render replays the stream through the engine's ContextBuilder
in a thread worker, so typing never waits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Select, Static

from zymi_tui.context.knobs import KNOB_NAMES, PROFILES
from zymi_tui.context.tokens import load_encoding
from zymi_tui.project.reader import PROJECT_FILE
from zymi_tui.replay.call_context import SAME_TRAJECTORY
from zymi_tui.replay.compare import knob_dict
from zymi_tui.replay.profiles_io import ProfileFileError, apply_edit, plan_apply, runtime_context_block, save_profile
from zymi_tui.tui.actions import Act, Nav
from zymi_tui.tui.footers import FittingFooter
from zymi_tui.tui.safe_text import safe_text
from zymi_tui.tui.tuning.curve_view import CurveView
from zymi_tui.tui.tuning.diff_table import DiffTable
from zymi_tui.tui.tuning.editor_parts import ConfirmApply, KnobInput, KnobsPanel, Quiet
from zymi_tui.tui.tuning.editor_state import DIFF_LABELS, RECORDED, STATUS_STYLE
from zymi_tui.tui.tuning.editor_whatif import EditorWhatIf
from zymi_tui.tui.tuning.memory_reader import load_run, replay_stream
from zymi_tui.tui.tuning.model import diff_contexts, prepare_recorded
from zymi_tui.tui.tuning.whatif import StreamWhatIf


class TuningScreen(EditorWhatIf):
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
