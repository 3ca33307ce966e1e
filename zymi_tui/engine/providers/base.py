"""What every provider takes and returns."""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from zymi_tui.events.messages import TokenUsage, ToolCallInfo

REQUEST_TIMEOUT = httpx.Timeout(300.0, connect=15.0)
PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy"}  # what httpx reads (with NO_PROXY), any case


def http_client(url: str) -> httpx.AsyncClient:
    """The one client a provider keeps (its connections kept alive between calls). For a plain-http
    endpoint reached without a proxy (a local model), no CA bundle is loaded (50 ms at every start):
    its TLS context trusts no certificate, so any TLS it were ever asked for would fail, not pass."""
    if url.startswith("http://") and not any(k.lower() in PROXY_VARIABLES for k in os.environ):
        return httpx.AsyncClient(timeout=REQUEST_TIMEOUT, verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
    return httpx.AsyncClient(timeout=REQUEST_TIMEOUT)


class ProviderError(Exception):
    """A failed call; the message is zymi's error text (`API error (status N): ...`, `HTTP request failed: ...`)."""


@dataclass(frozen=True)
class LlmRequest:
    messages: list[dict[str, Any]]  # OpenAI wire form
    tools: list[dict[str, Any]]  # [{name, description, parameters}]
    temperature: float
    max_tokens: int


@dataclass
class LlmResponse:
    content: str | None
    tool_calls: list[ToolCallInfo] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=lambda: TokenUsage(input_tokens=0, output_tokens=0))
    finish_reason: str | None = None


class Provider(Protocol):
    name: str
    model: str

    async def complete(self, request: LlmRequest) -> LlmResponse: ...


def transport_error(url: str, e: httpx.HTTPError) -> ProviderError:
    cause = str(e) or type(e).__name__
    inner = e.__cause__ or e.__context__
    if inner is not None and str(inner) and str(inner) not in cause:
        cause += f": {inner}"
    return ProviderError(f"HTTP request failed: error sending request for url ({url}): {cause}")
