"""`zymi-tui export`: a store's (or a run's) LLM calls as LHAR (context-lens) or OTLP/JSON spans."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from zymi_tui.engine.config import LlmConfig
from zymi_tui.engine.loader import ProjectError, Workspace, load_workspace
from zymi_tui.engine.providers.base import LlmRequest
from zymi_tui.engine.providers.openai import request_body
from zymi_tui.engine.tools import tool_definitions
from zymi_tui.events.store import STEP_MARK, open_reader
from zymi_tui.replay.calls import CallContext, recorded_knobs, replay_store
from zymi_tui.replay.export import ExportMeta, lhar_lines, otlp_traces

from .common import EXIT_OK, add_store_arg, guarded, run_async, warn
from .flags import add_runs_filter, run_step_streams
from .tuning_cmds import locate, write_or_print

AGENT_TEMPERATURE = 0.7  # what zymi's agent loop sends (checked against the recorded request bodies)
COMPACTION_TEMPERATURE, COMPACTION_MAX_TOKENS = 0.3, 1024


class RequestBodies:
    """The exact request body of a replayed call, built as the engine builds it from the project."""

    def __init__(self, project: Path | None) -> None:
        self.ws: Workspace | None = None
        if project is not None:
            try:
                self.ws = load_workspace(project, environ={})
            except ProjectError as e:
                warn(f"{project}: request bodies left out ({e})")
        llm = self.ws.project.llm if self.ws is not None else None
        self.llm = llm if isinstance(llm, LlmConfig) else None

    @property
    def model(self) -> str:
        return self.llm.model if self.llm is not None and self.llm.model else "unknown"

    @property
    def provider(self) -> str:
        return self.llm.provider if self.llm is not None else "openai"

    def __call__(self, row: CallContext) -> dict[str, Any] | None:
        if self.ws is None or row.rendered is None:
            return None
        stream = self.llm.stream if self.llm is not None else False
        if row.is_compaction:
            req = LlmRequest(row.rendered.wire(), [], COMPACTION_TEMPERATURE, COMPACTION_MAX_TOKENS)
            return request_body(self.model, req, stream)
        pipeline = self.ws.pipelines.get(row.pipeline or "")
        step = pipeline.step(row.stream_id.split(STEP_MARK, 1)[-1]) if pipeline is not None else None
        agent = self.ws.agents.get(step.agent or "") if step is not None else None
        if agent is None:
            return None
        max_tokens = agent.max_tokens if agent.max_tokens is not None else self.ws.project.defaults.max_tokens
        model = agent.model or self.model
        tools = tool_definitions(agent.tools, self.ws.tools)
        return request_body(model, LlmRequest(row.rendered.wire(), tools, AGENT_TEMPERATURE, max_tokens), stream)


def configure(command: str, p: argparse.ArgumentParser) -> None:
    add_store_arg(p)
    p.add_argument("--project", metavar="DIR", help="the project folder the store was recorded with (prefix, tools)")
    p.add_argument(
        "--format",
        choices=["lhar", "otel"],
        required=True,
        help="lhar: context-lens's JSON Lines; otel: OTLP/JSON spans (GenAI conventions)",
    )
    add_runs_filter(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write there instead of stdout")
    p.set_defaults(func=cmd_export)


async def _rows(args: argparse.Namespace) -> tuple[list[CallContext], RequestBodies, int]:
    location, project = locate(args)
    reader = await open_reader(location)
    try:
        streams = await run_step_streams(reader, args)
        rows = [r async for r in replay_store(reader, project=project, streams=streams)]
    finally:
        await reader.close()
    return rows, RequestBodies(project), recorded_knobs(project).hard_cap_chars


@guarded
def cmd_export(args: argparse.Namespace) -> int:
    rows, bodies, hard_cap = run_async(_rows(args))
    meta = ExportMeta(model=bodies.model, provider=bodies.provider, window_tokens=hard_cap // 4)
    if args.format == "lhar":
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lhar_lines(rows, meta, bodies))
    else:
        text = json.dumps(otlp_traces(rows, meta), ensure_ascii=False) + "\n"
    write_or_print(text, args.output)
    return EXIT_OK
