"""A fork running inside the dashboard: its own engine runtime, progress kept on a plain object.

The job is started as an *app* worker, not a screen worker, so closing the modal (Esc) never stops
it: the fork goes on in the background and its run shows up in the runs list through the live
tail. No approval handler is attached (the dashboard owns the terminal), so a step that needs
approval is denied, as in zymi's observe.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from zymi_tui.engine.loader import Workspace, load_workspace
from zymi_tui.engine.resume import ForkOutcome, KnobChoice, ResumeError, ResumePlan, fork, plan_resume
from zymi_tui.engine.runtime import close_runtime, open_runtime
from zymi_tui.errors import UserError
from zymi_tui.events.describe import describe
from zymi_tui.events.location import StoreLocation, same_store
from zymi_tui.events.store import EventReader, step_of
from zymi_tui.events.stored import StoredEvent
from zymi_tui.events.timestamps import format_timestamp

LOG_LINES = 400


@dataclass
class ForkJob:
    parent: str
    step: str
    pipeline: str
    knobs: KnobChoice
    state: str = "running"  # "running" | "done" | "failed"
    stream_id: str | None = None
    outcome: ForkOutcome | None = None
    error: str | None = None
    log: list[str] = field(default_factory=list)
    events: int = 0

    def hear(self, se: StoredEvent) -> None:
        line = describe(se.event)
        where = step_of(se.event.stream_id)
        when = format_timestamp(se.event.timestamp_ns)[11:19]
        self.events += 1
        self.log.append(f"{line.icon} {when} {line.label:<14} {('[' + where + '] ') if where else ''}{line.detail}")
        del self.log[:-LOG_LINES]

    @property
    def summary(self) -> str:
        if self.state == "running":
            return f"forking {self.parent} at '{self.step}': {self.events} event(s) so far"
        if self.state == "done" and self.outcome is not None and self.outcome.success:
            return f"fork {self.stream_id} completed"
        return f"fork {self.stream_id or ''} failed: {self.error or 'pipeline had failing steps'}"


def load_project(project: Path | None, store: StoreLocation) -> Workspace:
    """The project the store belongs to; a fork writes into that project's store only."""
    if project is None:
        raise ResumeError("forking needs the project folder (open the dashboard on a project, or pass -d DIR)")
    ws = load_workspace(project)
    if not same_store(ws.store, store):
        raise ResumeError(f"the project {project} writes to {ws.store}, not to the store shown ({store})")
    return ws


async def preview(
    reader: EventReader, project: Path | None, store: StoreLocation, parent: str, step: str
) -> ResumePlan:
    ws = await asyncio.to_thread(load_project, project, store)
    return await plan_resume(reader, ws, parent, step)


async def run_job(job: ForkJob, project: Path | None, store: StoreLocation) -> None:
    """Run the fork to its end, recording progress on `job`; never raises (failures land on the job)."""
    try:
        ws = await asyncio.to_thread(load_project, project, store)
        rt = await open_runtime(ws, [job.pipeline], None)
    except UserError as e:
        job.state, job.error = "failed", e.one_line()
        return
    rt.recorder.listeners.append(job.hear)
    try:
        plan = await plan_resume(rt.reader, ws, job.parent, job.step)

        def started(stream: str) -> None:
            job.stream_id = stream

        job.outcome = await fork(rt, plan, job.knobs, on_stream=started)
        job.error = job.outcome.error
        job.state = "done" if job.outcome.success else "failed"
    except UserError as e:
        job.state, job.error = "failed", e.one_line()
    finally:
        await close_runtime(rt)
