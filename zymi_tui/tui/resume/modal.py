"""The fork modal (zymi observe's `R`): Confirm (plan, step, knobs) → Running (live log) → Done | Failed.

Unlike zymi's, Esc always closes it: the fork is an app worker and goes on in the background.
Keys: ↑/↓ pick the fork step, `p` cycles the knob profile (when not opened from the tuning panel),
Enter starts the fork (Confirm) or jumps to the fork's run (Done), `c` compares parent and fork.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from zymi_tui.context.knobs import all_profiles, resolve_knobs
from zymi_tui.engine.dag import plan_levels
from zymi_tui.engine.resume import KnobChoice, ResumePlan, plan_lines
from zymi_tui.engine.runtime import workspace_knobs
from zymi_tui.errors import UserError
from zymi_tui.events.kinds import PipelineRequested, WorkflowNodeCompleted
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.tui.actions import Act, ActionModal
from zymi_tui.tui.resume.job import ForkJob, load_project, preview, run_job
from zymi_tui.tui.safe_text import clean

SHOWN_LOG = 14
STATE_STYLE = {"confirm": "cyan", "running": "yellow", "done": "green", "failed": "red"}

OnStream = Callable[[str], None]


class ForkModal(ActionModal):
    DEFAULT_CSS = """
    ForkModal { align: center middle; }
    #fork-box { width: 90%; max-width: 130; height: auto; max-height: 90%; padding: 0 1;
                border: thick $accent; background: $surface; }
    #fork-box.running { border: thick $warning; }
    #fork-box.done { border: thick $success; }
    #fork-box.failed { border: thick $error; }
    #fork-body { height: auto; }
    #fork-keys { color: $text-muted; height: auto; }
    """
    HELP_TITLE = "Fork a run"
    HELP_INTRO = "Fork the run at a step: the steps before it are kept as recorded, the rest re-run."
    ACTIONS = (
        Act(
            "escape", "close", "Close", "Close (a running fork goes on in the background).", "close back", priority=True
        ),
        Act("enter", "go", "Go", "Start the fork; when it is done, go to the fork's run.", "fork resume start go"),
        Act("up,k", "step(-1)", "Prev step", "Fork from the previous step.", "step"),
        Act("down,j", "step(1)", "Next step", "Fork from the next step.", "step"),
        Act("p", "profile", "Profile", "Cycle the knob profile of the re-run steps.", "profile knobs"),
        Act("c", "compare", "Compare", "Compare the finished fork with its parent.", "compare fork parent"),
    )

    def __init__(
        self,
        reader: EventReader,
        project: Path | None,
        store: StoreLocation,
        parent: str,
        step: str | None,
        *,
        knobs: KnobChoice | None = None,
        on_jump: OnStream | None = None,
        on_compare: Callable[[str, str], None] | None = None,
        job: ForkJob | None = None,
    ) -> None:
        super().__init__()
        self.reader, self.project, self.store, self.parent_stream = reader, project, store, parent
        self.step = step
        self.fixed_knobs = knobs  # from the tuning panel: not cycled here
        self.knobs = knobs
        self.profiles: list[str | None] = [None, *sorted(all_profiles())]
        self.profile_i = 0
        self.steps: list[str] = []
        self.plan: ResumePlan | None = None
        self.problem: str | None = None
        self.on_jump, self.on_compare = on_jump, on_compare
        self.job = job  # set when reopening a running fork
        self.pipeline: str | None = None
        self._keys_shown: tuple[bool, ...] = ()  # the keys on the footer (see `check_action`)

    def compose(self) -> ComposeResult:
        with Vertical(id="fork-box"):
            yield Static(id="fork-body")
            yield Static(id="fork-keys")

    def on_mount(self) -> None:
        self.set_interval(0.1, self.redraw)
        if self.job is None:
            self.load_steps()
        self.redraw()

    @property
    def state(self) -> str:
        return "confirm" if self.job is None else self.job.state

    # -- confirm ------------------------------------------------------------------------------
    @work(exclusive=True, group="fork-plan", exit_on_error=False)
    async def load_steps(self) -> None:
        """The parent's pipeline steps (DAG order) and a default step: the first that did not succeed."""
        try:
            ws = await asyncio.to_thread(load_project, self.project, self.store)
            top = await self.reader.read_stream(self.parent_stream)
        except UserError as e:
            self.problem = e.one_line()
            return
        request = next((se.event.kind for se in top if isinstance(se.event.kind, PipelineRequested)), None)
        if request is None or request.pipeline not in ws.pipelines:
            self.problem = (
                f"{self.parent_stream} is not a pipeline run" if request is None
                else f"pipeline '{request.pipeline}' from parent stream not found in current project"
            )  # fmt: skip
            return
        self.pipeline = request.pipeline
        self.steps = [s for level in plan_levels(ws.pipelines[request.pipeline]) for s in level]
        if self.fixed_knobs is None:
            self.knobs = KnobChoice(workspace_knobs(ws))
        ok = {k.node_id for se in top if isinstance(k := se.event.kind, WorkflowNodeCompleted) and k.success}
        if self.step is None and self.steps:
            self.step = next((s for s in self.steps if s not in ok), self.steps[-1])
        self.replan()

    @work(exclusive=True, group="fork-plan", exit_on_error=False)
    async def replan(self) -> None:
        self.problem = None
        try:
            self.plan = await preview(self.reader, self.project, self.store, self.parent_stream, self.step or "")
            self.pipeline = self.plan.pipeline
        except UserError as e:
            self.plan, self.problem = None, e.one_line()

    def worker_failed(self, group: str, line: str) -> None:
        self.problem = line  # the confirm view shows it (redrawn ten times a second)

    def action_step(self, delta: int) -> None:
        if self.job is not None or not self.steps:
            return
        i = self.steps.index(self.step) if self.step in self.steps else 0
        self.step = self.steps[(i + delta) % len(self.steps)]
        self.replan()

    def action_profile(self) -> None:
        if self.job is not None or self.fixed_knobs is not None:
            return
        try:
            ws = load_project(self.project, self.store)
            self.profile_i = (self.profile_i + 1) % len(self.profiles)
            profile = self.profiles[self.profile_i]
            self.knobs = KnobChoice(resolve_knobs(workspace_knobs(ws), profile, []), profile)
        except UserError as e:
            self.problem = e.one_line()

    def action_go(self) -> None:
        if self.job is None:
            if self.plan is None or self.knobs is None or self.step is None or self.pipeline is None:
                self.notify("nothing to fork: " + (self.problem or "the plan is not ready"), severity="warning")
                return
            self.job = ForkJob(self.parent_stream, self.step, self.pipeline, self.knobs)
            self.app.run_worker(run_job(self.job, self.project, self.store), group="fork", exit_on_error=False)
            self.redraw()
        elif self.job.state == "done" and self.job.stream_id and self.on_jump is not None:
            self.dismiss()
            self.on_jump(self.job.stream_id)

    def _can_compare(self) -> bool:
        """A fork that ended (done or failed) with a run of its own to compare with the parent."""
        job = self.job
        return job is not None and job.state != "running" and bool(job.stream_id) and self.on_compare is not None

    def _keys_apply(self) -> tuple[bool, bool, bool, bool]:
        """Whether go, step, profile and compare do something in the dialog's state now."""
        job = self.job
        go = job is None or (job.state == "done" and bool(job.stream_id) and self.on_jump is not None)
        return go, job is None, job is None and self.fixed_knobs is None, self._can_compare()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # a key is on the footer (and in the palette) while it does something: `c Compare` once there
        # is a fork to compare, the step and profile keys until the fork starts
        keys = ("go", "step", "profile", "compare")
        return self._keys_apply()[keys.index(action)] if action in keys else True

    def action_compare(self) -> None:
        if self._can_compare() and self.job is not None and self.job.stream_id and self.on_compare:
            self.dismiss()
            self.on_compare(self.parent_stream, self.job.stream_id)

    def action_close(self) -> None:
        if self.job is not None and self.job.state == "running":
            self.app.notify("the fork goes on in the background; its run appears in the list")
        self.dismiss()

    # -- drawing ------------------------------------------------------------------------------
    def redraw(self) -> None:
        if self._keys_apply() != self._keys_shown:  # the footer's keys follow the fork's state
            self._keys_shown = self._keys_apply()
            self.refresh_bindings()
        box = self.query_one("#fork-box")
        for s in STATE_STYLE:
            box.set_class(s == self.state, s)
        body, keys = Text(), Text()
        title = {"confirm": "Fork from this step?", "running": "Forking…", "done": "Fork done", "failed": "Fork failed"}
        body.append(title[self.state] + "\n", style=f"bold {STATE_STYLE[self.state]}")
        if self.job is None:
            self._draw_confirm(body, keys)
        else:
            self._draw_job(self.job, body, keys)
        self.query_one("#fork-body", Static).update(body)
        self.query_one("#fork-keys", Static).update(keys)

    def _draw_confirm(self, body: Text, keys: Text) -> None:
        body.append(clean(f"parent: {self.parent_stream}") + "\n", style="dim")
        if self.plan is not None:
            for line in plan_lines(self.plan, dry_run=False):
                body.append(clean(line) + "\n")
        elif self.problem is None:
            body.append("planning…\n", style="dim")
        if self.knobs is not None:
            body.append("knobs for the re-run steps: ", style="bold")
            body.append(clean(self.knobs.describe()) + "\n")
        if self.problem:
            body.append(clean(self.problem) + "\n", style="bold red")
        body.append("No approval handler here: a step that needs approval is denied.", style="dim")
        keys.append("Enter fork · ↑/↓ step" + ("" if self.fixed_knobs else " · p profile") + " · Esc close")

    def _draw_job(self, job: ForkJob, body: Text, keys: Text) -> None:
        body.append(clean(f"parent: {job.parent}  at '{job.step}'   knobs: {job.knobs.describe()}") + "\n", style="dim")
        if job.stream_id:
            body.append(clean(f"fork:   {job.stream_id}") + "\n", style="bold")
        if not job.log:
            body.append("(waiting for the fork's first events…)\n", style="dim")
        for line in job.log[-SHOWN_LOG:]:
            body.append(clean(line, one_line=True, max_cells=160) + "\n")
        if job.state == "done":
            answer = job.outcome.final_output if job.outcome else None
            body.append(
                "\n✓ completed" + (": " + clean(answer, one_line=True, max_cells=200) if answer else ""), style="green"
            )
            keys.append("Enter go to the fork's run · c compare with the parent · Esc close")
        elif job.state == "failed":
            body.append("\n✗ " + clean(job.error or "pipeline had failing steps"), style="bold red")
            keys.append(("c compare with the parent · " if job.stream_id else "") + "Esc close")
        else:
            keys.append("Esc close (the fork goes on in the background)")
