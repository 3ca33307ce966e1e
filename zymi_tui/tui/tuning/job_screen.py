"""What the comparison and sweep screens share: one whole-store job at a time on a worker thread, with
a progress bar, a status line and the elapsed time; escape cancels a running job, else goes back."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import ProgressBar, Static
from textual.worker import get_current_worker

from zymi_tui.tui.actions import ActionScreen
from zymi_tui.tui.safe_text import safe_text
from zymi_tui.tui.tuning.jobs import Cancelled, Tick

Job = Callable[[Tick, Callable[[], bool]], object]
"""A job run with a progress callback and a `cancelled()` check (tuning/jobs.py's run_*)."""


class JobProgress(Message):
    def __init__(self, fraction: float, label: str) -> None:
        super().__init__()
        self.fraction, self.label = fraction, label


class JobDone(Message):
    def __init__(self, result: object, error: str | None, seconds: float) -> None:
        super().__init__()
        self.result, self.error, self.seconds = result, error, seconds


class JobScreen(ActionScreen):
    """A subclass names its worker group (`JOB`, whose status line is `#<JOB>-status`: a failed
    worker is shown there), yields `job_widgets()` in its layout, starts a job with `start_job` and
    shows its result in `show_result`."""

    CSS_PATH = str(Path(__file__).with_name("tuning.tcss"))
    HAS_INPUT = True
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]  # noqa: RUF012  (tuning.tcss: tables whole below 140)
    JOB: ClassVar[str] = "job"
    PROGRESS: ClassVar[str] = ""  # before a tick's label: "replaying under " chat… 40%
    DONE_VERB: ClassVar[str] = "done"  # "replayed in 1.23 s"

    def __init_subclass__(cls, **kw: Any) -> None:
        cls.FAILURE_PANELS = {cls.JOB: f"#{cls.JOB}-status"}
        super().__init_subclass__(**kw)

    def __init__(self) -> None:
        super().__init__()
        self.running = False

    def job_widgets(self) -> ComposeResult:
        yield ProgressBar(total=1.0, id="progress", show_eta=False)
        yield Static("", id=f"{self.JOB}-status")
        yield Static("", id="elapsed")

    def status(self, text: str, *, error: bool = False) -> None:
        self.query_one(f"#{self.JOB}-status", Static).update(safe_text(text, "bold red" if error else ""))

    def start_job(self, job: Job, status: str) -> None:
        self.running = True
        self.query_one("#progress", ProgressBar).update(progress=0.0)
        self.status(status)
        self.run_worker(lambda: self._run(job), thread=True, exclusive=True, group=self.JOB, exit_on_error=False)

    def _run(self, job: Job) -> None:
        worker = get_current_worker()
        t0 = time.perf_counter()
        try:
            result = job(lambda f, name: self.post_message(JobProgress(f, name)), lambda: worker.is_cancelled)
        except Cancelled:
            self.post_message(JobDone(None, "cancelled", 0.0))
            return
        except Exception as e:  # a store or price-table problem: shown, never a crash
            self.post_message(JobDone(None, str(e).splitlines()[0] if str(e) else type(e).__name__, 0.0))
            return
        self.post_message(JobDone(result, None, time.perf_counter() - t0))

    def show_result(self, result: object, seconds: float) -> None:
        """A finished job's result, on screen."""

    def on_job_progress(self, message: JobProgress) -> None:
        self.query_one("#progress", ProgressBar).update(progress=message.fraction)
        self.status(f"{self.PROGRESS}{message.label}… {message.fraction:.0%} (escape cancels)")

    def on_job_done(self, message: JobDone) -> None:
        self.running = False
        if message.error is not None:
            self.status(message.error, error=True)
            return
        self.query_one("#progress", ProgressBar).update(progress=1.0)
        self.query_one("#elapsed", Static).update(Text(f"{self.DONE_VERB} in {message.seconds:.2f} s", style="dim"))
        self.show_result(message.result, message.seconds)

    def action_close(self) -> None:
        if self.running:
            self.workers.cancel_group(self, self.JOB)
            self.running = False
            self.status("cancelled", error=True)
            return
        self.dismiss(None)
