"""What one pipeline run and its steps share (its scope, a step's result, a step's failure), apart from
the agent and the tools, so the runner writes a run's first events before it loads them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zymi_tui.engine.shell import ShellSession


@dataclass
class RunScope:
    """What one pipeline run shares: its stream, correlation id, memory and shell session."""

    stream_id: str
    correlation_id: str
    memory: dict[str, str] = field(default_factory=dict)
    shell: ShellSession | None = None
    shell_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class StepError(Exception):
    """A step failure that seals the step and halts the run (LLM failure, length, hard cap)."""


@dataclass
class StepResult:
    output: str | None
    iterations: int
    success: bool
