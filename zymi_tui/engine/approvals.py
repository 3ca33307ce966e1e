"""Who answers an approval request (docs/engine.md#approvals).
Injectable: a TUI modal can implement `ApprovalHandler`."""

from __future__ import annotations

import asyncio
import sys
from typing import Protocol, TextIO

import msgspec


class Decision(msgspec.Struct, frozen=True):
    granted: bool
    decided_by: str
    reason: str | None = None


class ApprovalHandler(Protocol):
    channel: str

    async def decide(self, description: str, explanation: str | None) -> Decision: ...


class TerminalApproval:
    """zymi's terminal channel: asks on stdout, reads one line; EOF denies with `no_input_channel`."""

    channel = "terminal"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self._lock = asyncio.Lock()

    def _ask(self, description: str, explanation: str | None) -> str | None:
        text = f"\n--- approval required ----------------------------\n  {description}\n"
        if explanation:
            text += f"  reason: {explanation}\n"
        self.stdout.write(text + "  approve? [y/N]: ")
        self.stdout.flush()
        try:
            line = self.stdin.readline()
        except (OSError, ValueError) as e:
            return f"\x00channel_error:{type(e).__name__}"
        return line if line else None

    async def decide(self, description: str, explanation: str | None) -> Decision:
        async with self._lock:
            line = await asyncio.to_thread(self._ask, description, explanation)
        if line is None:
            return Decision(False, "terminal:terminal", "no_input_channel")
        if line.startswith("\x00"):
            return Decision(False, "terminal:terminal", line[1:])
        return Decision(line.strip().lower() in ("y", "yes"), "terminal:terminal")


class DenyAll:
    """For runs nobody can answer: every request is denied as the terminal channel does on EOF."""

    channel = "terminal"

    async def decide(self, description: str, explanation: str | None) -> Decision:
        return Decision(False, "terminal:terminal", "no_input_channel")
