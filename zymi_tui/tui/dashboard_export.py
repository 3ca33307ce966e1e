"""ctrl+o on the dashboard: the selected run written out, as `zymi-tui export` would, into the export folder
(tui/writes.py): its LLM calls as LHAR (context-lens's JSON Lines, `export --format lhar -r RUN`) and the
screen as it is shown, as SVG."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from zymi_tui.engine.bodies import RequestBodies
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader, run_of, step_of
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.telemetry.export_calls import walk
from zymi_tui.telemetry.lhar_export import ExportMeta, LharBuilder
from zymi_tui.telemetry.lhar_files import opening_line
from zymi_tui.tui.store_job import with_reader
from zymi_tui.tui.writes import write_files


def run_lhar(store: StoreLocation, project: Path | None, run: str) -> str:
    """The run's LLM calls as LHAR text, as `export --format lhar -r RUN` writes them (read on a reader of
    this worker thread's own)."""

    async def job(reader: EventReader) -> str:
        streams = sorted(s.stream_id for s in await reader.streams() if run_of(s.stream_id) == run)
        bodies = RequestBodies(project)
        meta = ExportMeta(bodies.model, bodies.provider, recorded_knobs(project).hard_cap_chars // 4)

        def body(row: CallContext) -> dict[str, Any] | None:
            if row.rendered is None:
                return None
            return bodies.body(row.rendered.wire(), pipeline=row.pipeline, step=step_of(row.stream_id),
                               compaction=row.is_compaction)  # fmt: skip

        builder = LharBuilder(meta, body)
        lines: list[dict[str, Any]] = []
        async for se, rows in walk(reader, project, streams):
            for conversation, entry in builder.feed(se, rows):
                if not lines:
                    lines.append(opening_line(conversation, meta.model, entry))
                lines.append(entry)
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)

    return with_reader(store, job)


def export_run(store: StoreLocation, project: Path | None, run: str, svg: str) -> str:
    """Write `<run>.lhar` and `<run>.svg`; the line naming both in full (raises OSError)."""
    stem = re.sub(r"[^\w.-]", "_", run)[:120]  # a file name from store text
    lhar = run_lhar(store, project, run)
    return write_files([(f"{stem}.lhar", lambda: lhar), (f"{stem}.svg", lambda: svg)])
