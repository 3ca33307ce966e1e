"""The exact request body of an LLM call, built from the project as the agent loop builds it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the engine loads only with a project (an export without one never makes a body)
    from zymi_tui.engine.config import LlmConfig
    from zymi_tui.engine.loader import Workspace

AGENT_TEMPERATURE = 0.7  # what zymi's agent loop sends (tests check every recorded request body)
COMPACTION_TEMPERATURE, COMPACTION_MAX_TOKENS = 0.3, 1024


class RequestBodies:
    """Request bodies for the calls of a store recorded with `project` (None: no bodies)."""

    def __init__(self, project: Path | None) -> None:
        self.ws: Workspace | None = None
        self.problem: str | None = None
        if project is not None:
            from zymi_tui.engine.loader import load_workspace
            from zymi_tui.project.errors import ProjectError

            try:
                self.ws = load_workspace(project, environ={})
            except ProjectError as e:
                self.problem = f"{project}: request bodies left out ({e.message})"
        self.llm: LlmConfig | None = self.ws.llm if self.ws is not None else None

    @property
    def model(self) -> str:
        return self.llm.model if self.llm is not None and self.llm.model else "unknown"

    @property
    def provider(self) -> str:
        return self.llm.provider if self.llm is not None else "openai"

    def body(
        self, messages: list[dict[str, Any]], *, pipeline: str | None, step: str | None, compaction: bool
    ) -> dict[str, Any] | None:
        """The body for `messages` (OpenAI wire form) sent by `step` of `pipeline`, or by a compaction."""
        if self.ws is None:
            return None
        from zymi_tui.engine.providers.base import LlmRequest
        from zymi_tui.engine.providers.openai import request_body
        from zymi_tui.engine.tool_catalog import tool_definitions

        stream = self.llm.stream if self.llm is not None else False
        if compaction:
            return request_body(self.model, LlmRequest(messages, [], COMPACTION_TEMPERATURE, COMPACTION_MAX_TOKENS),
                                stream)  # fmt: skip
        spec = self.ws.pipelines.get(pipeline or "")
        step_cfg = spec.step(step or "") if spec is not None else None
        agent = self.ws.agents.get(step_cfg.agent or "") if step_cfg is not None else None
        if agent is None:
            return None
        max_tokens = agent.max_tokens if agent.max_tokens is not None else self.ws.project.defaults.max_tokens
        tools = tool_definitions(agent.tools, self.ws.tools)
        request = LlmRequest(messages, tools, AGENT_TEMPERATURE, max_tokens)
        return request_body(agent.model or self.model, request, stream)
