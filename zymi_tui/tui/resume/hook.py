"""What the dashboard calls for fork-resume: `R` fork, `C` compare, `P` parent ⇄ fork (the lineage line: `tui/lineage`).

The tuning panel calls `fork_for_real` with its edited knobs ("run this for real").
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from textual.app import App
from textual.notifications import SeverityLevel

from zymi_tui.context.knobs import KNOB_NAMES, ContextKnobs
from zymi_tui.engine.resume import KnobChoice
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.runs import RunSummary
from zymi_tui.events.store import EventReader
from zymi_tui.tui.lineage import forks_of
from zymi_tui.tui.model import RunKey, RunsModel
from zymi_tui.tui.resume.compare import ForkCompareScreen
from zymi_tui.tui.resume.modal import ForkModal
from zymi_tui.tui.target import Target


class Dashboard(Protocol):
    """What the fork hooks need of the dashboard's main screen."""

    target: Target
    runs: RunsModel
    reader: EventReader | None
    soft_cap: int
    hard_cap: int

    @property
    def app(self) -> App[None]: ...

    def notify(self, message: str, *, severity: SeverityLevel = "information") -> None: ...

    def current_key(self) -> RunKey | None: ...

    def jump_to_run(self, stream_id: str) -> None: ...


def _selected(main: Dashboard) -> RunSummary | None:
    key = main.current_key()
    return next((s for s in main.runs.summaries if key is not None and s.stream_id == key.stream_id), None)


def jump_lineage(main: Dashboard) -> None:
    s = _selected(main)
    if s is None:
        return
    if s.fork is not None:
        main.jump_to_run(s.fork.parent_stream_id)
    elif forks := forks_of(main.runs, s.stream_id):
        main.jump_to_run(forks[0].stream_id)
    else:
        main.notify("this run is neither a fork nor forked (R forks it)")


def open_compare(main: Dashboard, parent: str | None = None, fork: str | None = None) -> None:
    if main.reader is None:
        return
    if parent is None or fork is None:
        s = _selected(main)
        if s is None:
            return
        if s.fork is not None:
            parent, fork = s.fork.parent_stream_id, s.stream_id
        elif forks := forks_of(main.runs, s.stream_id):
            parent, fork = s.stream_id, forks[0].stream_id
        else:
            main.notify("select a fork, or a run that has been forked, to compare")
            return
    main.app.push_screen(ForkCompareScreen(main.reader, parent, fork, soft_cap=main.soft_cap, hard_cap=main.hard_cap))


def open_fork(main: Dashboard, step: str | None = None, knobs: KnobChoice | None = None) -> None:
    s = _selected(main)
    if s is None or main.reader is None:
        main.notify("select a run to fork")
        return
    main.app.push_screen(
        ForkModal(
            main.reader,
            main.target.project,
            main.target.store,
            s.stream_id,
            step,
            knobs=knobs,
            on_jump=main.jump_to_run,
            on_compare=lambda parent, fork: open_compare(main, parent, fork),
        )
    )


def knob_choice_from_editor(base: ContextKnobs, edited: ContextKnobs) -> KnobChoice:
    """The tuning panel's knobs as `--set`s over the project's (what ResumeForked records)."""
    sets = tuple(
        f"{name}={'off' if getattr(edited, name) is None else getattr(edited, name)}"
        for name in KNOB_NAMES
        if getattr(edited, name) != getattr(base, name)
    )
    return KnobChoice(edited, None, sets)


def fork_for_real(
    app: App[object], reader: EventReader, project: Path | None, store: StoreLocation, parent: str, step: str | None,
    base: ContextKnobs, edited: ContextKnobs,
) -> None:  # fmt: skip
    """ "Run this for real": the fork modal for (parent, step) with the tuning panel's knobs."""
    app.push_screen(ForkModal(reader, project, store, parent, step, knobs=knob_choice_from_editor(base, edited)))
