"""ctrl+o on the dashboard: the selected run written out, as `zymi-tui export` would, into the export folder
(tui/writes.py): its LLM calls as LHAR (context-lens's JSON Lines, `export --format lhar -r RUN`) and the
screen as it is shown, as SVG."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader, run_of
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.telemetry.export_calls import walk
from zymi_tui.telemetry.lhar_export import ExportMeta, LharBuilder
from zymi_tui.telemetry.lhar_files import opening_line
from zymi_tui.telemetry.lhar_text import json_line
from zymi_tui.tui.store_job import with_reader
from zymi_tui.tui.writes import write_files


def run_lhar(store: StoreLocation, project: Path | None, run: str) -> str:
    """The run's LLM calls as LHAR text, as `export --format lhar -r RUN` writes them (read on a reader of
    this worker thread's own)."""

    async def job(reader: EventReader) -> str:
        streams = sorted(s.stream_id for s in await reader.streams() if run_of(s.stream_id) == run)
        bodies = RequestBodies(project)
        meta = ExportMeta(bodies.model, bodies.provider, recorded_knobs(project).hard_cap_chars // 4)

        def frame(pipeline: str | None, step: str | None, compaction: bool) -> dict[str, Any] | None:
            return bodies.body([], pipeline=pipeline, step=step, compaction=compaction)

        builder = LharBuilder(meta, frame if bodies.ws is not None else None)
        lines: list[bytes] = []
        async for se, rows in walk(reader, project, streams, reuse=False):
            for entry in builder.feed(se, rows):
                if not lines:
                    lines.append(json_line(opening_line(entry.conversation, meta.model, entry)))
                lines.append(entry.line)
        return b"".join(lines).decode()

    return with_reader(store, job)


def export_run(store: StoreLocation, project: Path | None, run: str, svg: str) -> str:
    """Write `<run>.lhar` and `<run>.svg`; the line naming both in full (raises OSError)."""
    stem = re.sub(r"[^\w.-]", "_", run)[:120]  # a file name from store text
    lhar = run_lhar(store, project, run)
    return write_files([(f"{stem}.lhar", lambda: lhar), (f"{stem}.svg", lambda: svg)])
