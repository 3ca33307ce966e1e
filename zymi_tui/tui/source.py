"""The dashboard's IO: what it reads from a store, in pages small enough to keep the UI live.

Every function here is awaited from a Textual worker; decoding is done a page at a time with a
yield to the event loop between pages, so a 100,000-event run never freezes the screen.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from zymi_tui.errors import UserError
from zymi_tui.events.kind_json import read_kind
from zymi_tui.events.kinds import LlmCallStarted
from zymi_tui.events.row_envelope import LeanError, envelope
from zymi_tui.events.runs import RunSummary, newest_runs, turn_ranges
from zymi_tui.events.store import EventReader, run_of, step_prefix
from zymi_tui.events.stored import BadRow, StoredEvent
from zymi_tui.project.reader import is_project, read_project
from zymi_tui.tui.model import RunKey

if TYPE_CHECKING:
    from zymi_tui.context.knobs import ContextKnobs

PAGE = 2000
FIRST_RUNS = 60  # runs (requests) drawn before the whole list is read: more than a tall screenful


@dataclass(frozen=True)
class FirstRuns:
    """The newest runs, read before the dashboard starts so that its first frame lists them."""

    summaries: list[RunSummary]
    whole: bool  # they are every run of the store (the whole list is not read again)
    last_global_id: int  # the store's last event when they were read: the live tail starts after it
    skipped: list[BadRow]  # rows that could not be read
    # not every run: waits for the whole list read by another process (None if it could not)
    rest: Callable[[], RestOfRuns | None] | None = field(default=None, compare=False)
    # whether `rest` would return at once (the other process has sent the whole list)
    rest_ready: Callable[[], bool] | None = field(default=None, compare=False)

    def settled(self) -> FirstRuns:
        """Every run, when the other process has already sent the whole list (taken without waiting); else
        these newest runs as they are (the rest to follow). A first frame drawn from it counts every run
        when they were read by then."""
        if self.whole or self.rest is None or self.rest_ready is None or not self.rest_ready():
            return self
        rest = self.rest()
        if rest is None:
            return replace(self, rest=None, rest_ready=None)  # the reader failed: the runs worker reads them
        return FirstRuns(rest.summaries, True, rest.last_global_id, self.skipped + rest.skipped)


@dataclass(frozen=True)
class RestOfRuns:
    """Every run of the store, read after `FirstRuns` by the process that read those."""

    summaries: list[RunSummary]
    last_global_id: int
    skipped: list[BadRow]


async def first_runs(reader: EventReader, n: int = FIRST_RUNS) -> FirstRuns:
    """The runs of the streams holding the newest `n` requests (`newest_runs`): a few indexed reads,
    whatever the store's size."""
    last = await reader.max_global_id()
    summaries, whole = await newest_runs(reader, n, turns=True)
    return FirstRuns(summaries, whole, last, list(reader.problems))


async def read_run(reader: EventReader, key: RunKey) -> list[StoredEvent]:
    """A run's events (its stream and step sub-streams) in global order; one turn's if the key names one.

    Each stream is read by its own indexed query: the step streams are named by the run stream's
    WorkflowNodeStarted / StepSkipped events (one `stream = ? OR stream LIKE ?` query scans the table).
    A turn's events are found on the run's index (ids first) and only they are read: a turn of a long
    chat stream costs its own rows, not the whole stream's.
    """
    # the event readers load with the first decoded event, not with the dashboard's first frame
    from zymi_tui.events.kinds import StepSkipped, WorkflowNodeStarted

    run = await reader.read_stream(key.stream_id)
    steps = dict.fromkeys(
        d.node_id if isinstance(d, WorkflowNodeStarted) else d.step_id
        for se in run
        if isinstance(d := se.event.kind, WorkflowNodeStarted | StepSkipped)
    )
    streams = {key.stream_id, *(step_prefix(key.stream_id) + step for step in steps)}
    if key.correlation_id is not None:
        cids = list(dict.fromkeys(se.event.correlation_id for se in run if se.event.correlation_id))
        keep = turn_ranges(run, cids).get(key.correlation_id)
        if keep is None:
            return []
        ids = [gid for gid, stream, _ in await reader.run_ids(key.stream_id) if gid in keep and stream in streams]
        return await reader.read_ids(ids)
    events = list(run)
    for step in steps:
        events.extend(await reader.read_stream(step_prefix(key.stream_id) + step))
    events.sort(key=lambda se: se.global_id)
    return events


async def read_peaks(reader: EventReader, turn_of: dict[str, str]) -> AsyncIterator[dict[RunKey, int]]:
    """Peak approx_context_chars per run and per turn, from the `llm_call_started` index, in pages read
    newest first (the runs list's top rows get theirs first); of each row only the envelope and
    `approx_context_chars` are read (`row_envelope`), not the whole event."""
    cursor: int | None = None
    while True:
        page = await reader.read_rows_before(cursor, PAGE, tag="llm_call_started")
        out: dict[RunKey, int] = {}
        for gid, stream_id, seq, data in page.rows:
            try:
                env = envelope(data)
                if env.kind.type == "LlmCallStarted" and isinstance(d := read_kind(env), LlmCallStarted):
                    _peak(out, env.stream_id, env.correlation_id, d.approx_context_chars, turn_of)
            except LeanError as e:
                reader.problems.append(BadRow(gid, stream_id, seq, str(e)))
        if out:
            yield out
        cursor = page.last_global_id
        if page.rows_scanned < PAGE:
            return
        await asyncio.sleep(0)


def peaks_of(events: list[StoredEvent], turn_of: dict[str, str]) -> dict[RunKey, int]:
    # the event readers load with the first decoded event, not with the dashboard's first frame
    from zymi_tui.events.kinds import LlmCallStarted

    out: dict[RunKey, int] = {}
    for se in events:
        d = se.event.kind
        if isinstance(d, LlmCallStarted):
            _peak(out, se.event.stream_id, se.event.correlation_id, d.approx_context_chars, turn_of)
    return out


def _peak(out: dict[RunKey, int], stream_id: str, cid: str | None, chars: int, turn_of: dict[str, str]) -> None:
    """Count `chars` toward its run's peak and, when its correlation is a known turn, that turn's."""
    stream = run_of(stream_id)
    keys = [RunKey(stream)]
    if cid is not None and turn_of.get(cid) == stream:
        keys.append(RunKey(stream, cid))
    for key in keys:
        if chars > out.get(key, -1):
            out[key] = chars


def knobs_of(project: Path | None) -> tuple[ContextKnobs, str]:
    """The project's recorded knobs (`runtime.context`), or the engine defaults and why."""
    # the knobs model and yaml load here, in the dashboard's start, not before its first frame
    from zymi_tui.context.knobs import ContextKnobs, project_knobs

    if project is None:
        return ContextKnobs(), "unknown: no project found (engine defaults assumed)"
    if not is_project(project):
        return ContextKnobs(), "unknown: no project.yml (engine defaults assumed)"
    try:
        read = read_project(project)
        if read.context_section is None:
            return ContextKnobs(), "engine defaults: project.yml sets no runtime.context"
        return project_knobs(read), "project.yml"
    except UserError as e:
        return ContextKnobs(), f"unknown: {e.message} (engine defaults assumed)"


AGENT_CAPS = "the agent's own: calls taken in from its spans (zymi masked nothing; the what-if applies zymi's knobs)"


def from_spans(stored: StoredEvent) -> bool:
    """A step `collect`/`import` took in from a foreign agent's spans (docs/telemetry-in.md#mapping)."""
    kind = stored.event.kind
    extra = kind.engine_notes
    return stored.event.tag == "workflow_node_started" and isinstance(extra, dict) and extra.get("origin") == "otel"


SPANS_PAGE = 500  # step starts read (and decoded) at a time by `store_from_spans`


async def store_from_spans(reader: EventReader) -> bool:
    """Whether any step of the store came from a foreign agent's spans: the step starts read a page at a
    time, until the first such step (a large store's step starts, decoded at once, weigh tens of MB)."""
    after = 0
    while page := await reader.read_kind_page("workflow_node_started", stream_id=None, after_global_id=after,
                                              limit=SPANS_PAGE):  # fmt: skip
        if any(map(from_spans, page)):
            return True
        after = page[-1].global_id
    return False
