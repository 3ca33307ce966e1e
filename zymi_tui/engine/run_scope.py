"""What one pipeline run and its steps share (its scope, a step's result, a step's failure), apart from
the agent and the tools, so the runner writes a run's first events before it loads them."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from zymi_tui.engine.shell import ShellSession


class RunScope(msgspec.Struct):
    """What one pipeline run shares: its stream, correlation id, memory and shell session."""

    stream_id: str
    correlation_id: str
    fresh: bool = False  # a stream this process named (a `run`'s): its step streams hold nothing before a step
    memory: dict[str, str] = msgspec.field(default_factory=dict)
    shell: ShellSession | None = None
    shell_lock: asyncio.Lock = msgspec.field(default_factory=asyncio.Lock)


class StepError(Exception):
    """A step failure that seals the step and halts the run (LLM failure, length, hard cap)."""


class StepResult(msgspec.Struct):
    output: str | None
    iterations: int
    success: bool
