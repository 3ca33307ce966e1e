"""What every provider takes and returns."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from zymi_tui.engine.providers.http import TransportFailure
from zymi_tui.events.messages import TokenUsage, ToolCallInfo


class ProviderError(Exception):
    """A failed call; the message is zymi's error text (`API error (status N): ...`, `HTTP request failed: ...`)."""


class LlmRequest(msgspec.Struct, frozen=True):
    messages: list[dict[str, Any]]  # OpenAI wire form
    tools: list[dict[str, Any]]  # [{name, description, parameters}]
    temperature: float
    max_tokens: int


class LlmResponse(msgspec.Struct):
    content: str | None
    tool_calls: list[ToolCallInfo] = msgspec.field(default_factory=list)
    usage: TokenUsage = msgspec.field(default_factory=lambda: TokenUsage(input_tokens=0, output_tokens=0))
    finish_reason: str | None = None


class Provider(Protocol):
    name: str
    model: str

    async def complete(self, request: LlmRequest) -> LlmResponse: ...


def transport_error(url: str, e: TransportFailure) -> ProviderError:
    return ProviderError(f"HTTP request failed: error sending request for url ({url}): {e}")
