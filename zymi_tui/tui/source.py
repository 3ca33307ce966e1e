"""The dashboard's IO: what it reads from a store, in pages small enough to keep the UI live.

Every function here is awaited from a Textual worker; decoding is done a page at a time with a
yield to the event loop between pages, so a 100,000-event run never freezes the screen.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from zymi_tui.context.knobs import ContextKnobs, KnobError, load_project_knobs
from zymi_tui.events.envelope import StoredEvent
from zymi_tui.events.kinds import LlmCallStarted, StepSkipped, WorkflowNodeStarted
from zymi_tui.events.runs import turn_ranges
from zymi_tui.events.store import EventReader, run_of, step_prefix
from zymi_tui.tui.model import RunKey

PAGE = 2000


async def read_run(reader: EventReader, key: RunKey) -> list[StoredEvent]:
    """A run's events (its stream and step sub-streams) in global order; one turn's if the key names one.

    Each stream is read by its own indexed query: the step streams are named by the run stream's
    WorkflowNodeStarted / StepSkipped events (one `stream = ? OR stream LIKE ?` query scans the table).
    """
    run = await reader.read_stream(key.stream_id)
    steps = dict.fromkeys(
        d.node_id if isinstance(d, WorkflowNodeStarted) else d.step_id
        for se in run
        if isinstance(d := se.event.kind, WorkflowNodeStarted | StepSkipped)
    )
    events = list(run)
    for step in steps:
        events.extend(await reader.read_stream(step_prefix(key.stream_id) + step))
    events.sort(key=lambda se: se.global_id)
    if key.correlation_id is None:
        return events
    cids = list(dict.fromkeys(se.event.correlation_id for se in run if se.event.correlation_id))
    keep = turn_ranges(run, cids).get(key.correlation_id)
    return [se for se in events if keep is not None and se.global_id in keep]


def key_of(se: StoredEvent, turn_of: dict[str, str]) -> RunKey:
    """The runs-list entry an event belongs to (turn when its correlation is a known turn)."""
    stream = run_of(se.event.stream_id)
    cid = se.event.correlation_id
    if cid is not None and turn_of.get(cid) == stream:
        return RunKey(stream, cid)
    return RunKey(stream)


async def read_peaks(reader: EventReader, turn_of: dict[str, str]) -> AsyncIterator[dict[RunKey, int]]:
    """Peak approx_context_chars per run and per turn, from the `llm_call_started` index, in pages."""
    cursor = 0
    while True:
        page = await reader.read_kind_page("llm_call_started", stream_id=None, after_global_id=cursor, limit=PAGE)
        if not page:
            return
        cursor = page[-1].global_id
        yield peaks_of(page, turn_of)
        if len(page) < PAGE:
            return
        await asyncio.sleep(0)


def peaks_of(events: list[StoredEvent], turn_of: dict[str, str]) -> dict[RunKey, int]:
    out: dict[RunKey, int] = {}
    for se in events:
        d = se.event.kind
        if not isinstance(d, LlmCallStarted):
            continue
        keys = {RunKey(run_of(se.event.stream_id)), key_of(se, turn_of)}
        for key in keys:
            if d.approx_context_chars > out.get(key, -1):
                out[key] = d.approx_context_chars
    return out


def infer_project(store_arg: str | None, resolved: str) -> Path | None:
    """The project folder whose pipelines/ and project.yml describe a store, when it can be told."""
    if store_arg and Path(store_arg).is_dir():
        return Path(store_arg)
    db = Path(resolved)
    if db.parent.name == ".zymi":
        return db.parent.parent
    for cand in (db.parent / "project", db.parent):
        if (cand / "project.yml").is_file():
            return cand
    return None


def knobs_of(project: Path | None) -> tuple[ContextKnobs, str]:
    """The project's recorded knobs (`runtime.context`), or the engine defaults and why."""
    if project is None:
        return ContextKnobs(), "engine defaults (no project folder)"
    if not (project / "project.yml").is_file():
        return ContextKnobs(), "engine defaults (no project.yml)"
    try:
        return load_project_knobs(project), "project.yml"
    except KnobError as e:
        return ContextKnobs(), f"engine defaults ({e})"
