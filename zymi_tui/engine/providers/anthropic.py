"""Anthropic messages API (docs/engine.md#anthropic): the last System message wins, as in zymi."""

from __future__ import annotations

import json
from typing import Any

from zymi_tui.engine.providers.base import LlmRequest, LlmResponse, ProviderError, transport_error
from zymi_tui.engine.providers.http import TransportFailure, http_client
from zymi_tui.events.messages import TokenUsage, ToolCallInfo

STOP_REASONS = {"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls"}


def json_body(body: dict[str, Any]) -> bytes:
    """The bytes sent: compact JSON, non-ASCII as UTF-8 (what httpx's `json=` made of it)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def request_body(model: str, request: LlmRequest) -> dict[str, Any]:
    system: str | None = None
    messages: list[dict[str, Any]] = []
    for m in request.messages:
        role = m["role"]
        if role == "system":
            system = m["content"]
        elif role == "user":
            messages.append({"role": "user", "content": m["content"]})
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.get("content"):
                blocks.append({"type": "text", "text": m["content"]})
            for tc in m.get("tool_calls") or []:
                try:
                    args = json.loads(tc["function"]["arguments"])
                except ValueError:
                    args = {}
                blocks.append({"type": "tool_use", "id": tc["id"], "name": tc["function"]["name"], "input": args})
            messages.append({"role": "assistant", "content": blocks})
        else:
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}],
                }
            )
    body: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens or 4096}
    if system is not None:
        body["system"] = system
    body["messages"] = messages
    if request.tools:
        body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in request.tools
        ]
    body["temperature"] = request.temperature
    return body


def parse_response(data: Any) -> LlmResponse:
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise ProviderError("serialization error: error decoding response body")
    text = "".join(b.get("text", "") for b in data["content"] if b.get("type") == "text")
    calls = [
        ToolCallInfo(id=b["id"], name=b["name"], arguments=json.dumps(b.get("input", {}), separators=(",", ":")))
        for b in data["content"]
        if b.get("type") == "tool_use"
    ]
    u = data.get("usage") or {}
    cache_read = int(u.get("cache_read_input_tokens") or 0)
    cache_new = int(u.get("cache_creation_input_tokens") or 0)
    usage = TokenUsage(
        input_tokens=int(u.get("input_tokens") or 0) + cache_read + cache_new,
        output_tokens=int(u.get("output_tokens") or 0),
        cached_input_tokens=cache_read,
        cache_creation_tokens=cache_new,
    )
    stop = data.get("stop_reason")
    return LlmResponse(text or None, calls, usage, STOP_REASONS.get(stop, stop) if isinstance(stop, str) else None)


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, model: str, base_url: str, api_key: str) -> None:
        self.model = model
        self.url = base_url.rstrip("/") + "/messages"
        self.api_key = api_key
        self._client = http_client(self.url)

    async def complete(self, request: LlmRequest) -> LlmResponse:
        headers = {"x-api-key": self.api_key, "anthropic-version": "2023-06-01", "content-type": "application/json"}
        try:
            resp = await self._client.post(json_body(request_body(self.model, request)), headers)
        except TransportFailure as e:
            raise transport_error(self.url, e) from None
        if not resp.is_success:
            raise ProviderError(f"API error (status {resp.status_code}): {resp.text}")
        try:
            return parse_response(resp.json())
        except ValueError:
            raise ProviderError("serialization error: error decoding response body") from None
