"""OpenAI-compatible chat completions (docs/engine.md#openai-compatible), including `stream: true` (SSE)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from zymi_tui.engine.providers.base import LlmRequest, LlmResponse, ProviderError, transport_error
from zymi_tui.engine.providers.http import TransportFailure, http_client
from zymi_tui.events.messages import TokenUsage, ToolCallInfo

REASONING_PREFIXES = ("o1", "o3", "gpt-5", "gpt-4.5")


def is_reasoning_model(model: str) -> bool:
    return model.lower().startswith(REASONING_PREFIXES)


def json_value(value: Any) -> Any:
    """`value` as zymi sends a `serde_json::Value` (a tool's parameter schema): every object's keys sorted."""
    if isinstance(value, dict):
        return {k: json_value(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [json_value(v) for v in value]
    return value


def tool_entries(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `tools` of a body: each tool as a `function`, its parameter schema as zymi sends it."""
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": json_value(t["parameters"])},
        }
        for t in tools
    ]


def request_body(model: str, request: LlmRequest, stream: bool, tools: Any = None) -> dict[str, Any]:
    """The body as a mapping; `tools`: its `tools` already made (`tool_entries`, or their JSON as `msgspec.Raw`)."""
    body: dict[str, Any] = {"model": model, "messages": request.messages}
    if request.tools:
        body["tools"] = tool_entries(request.tools) if tools is None else tools
    if is_reasoning_model(model):
        body["max_completion_tokens"] = request.max_tokens
    else:
        body["temperature"] = request.temperature
        body["max_tokens"] = request.max_tokens
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _usage(raw: Any) -> TokenUsage:
    if not isinstance(raw, dict):
        return TokenUsage(input_tokens=0, output_tokens=0)
    details = raw.get("prompt_tokens_details") or {}
    return TokenUsage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cached_input_tokens=int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0,
        cache_creation_tokens=0,
    )


def parse_completion(data: Any) -> LlmResponse:
    if not isinstance(data, dict) or not isinstance(data.get("model"), str):
        raise ProviderError("serialization error: error decoding response body")
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise ProviderError("serialization error: error decoding response body")
    if not choices:
        raise ProviderError("serialization error: empty choices array")
    choice = choices[0]
    msg = choice.get("message") or {}
    calls = [
        ToolCallInfo(
            id=str(c.get("id", "")),
            name=str((c.get("function") or {}).get("name", "")),
            arguments=str((c.get("function") or {}).get("arguments", "")),
        )
        for c in msg.get("tool_calls") or []
    ]
    return LlmResponse(msg.get("content"), calls, _usage(data.get("usage")), choice.get("finish_reason"))


def parse_sse(lines: list[str]) -> LlmResponse:
    content: str | None = None
    calls: dict[int, dict[str, str]] = {}
    usage: Any = None
    finish: str | None = None
    for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            break
        chunk = json.loads(payload)
        if "error" in chunk:
            raise ProviderError(f"API error (status 200): {json.dumps(chunk['error'], separators=(',', ':'))}")
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content = (content or "") + delta["content"]
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(int(tc.get("index", 0)), {"id": "", "name": "", "arguments": ""})
                if tc.get("id"):
                    slot["id"] = tc["id"]
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    tool_calls = [ToolCallInfo(**calls[i]) for i in sorted(calls)]
    return LlmResponse(content, tool_calls, _usage(usage), finish)


_encode = msgspec.json.Encoder().encode  # compact, non-ASCII as UTF-8: the bytes zymi's serde_json sends


class OpenAIProvider:
    name = "openai"

    def __init__(self, model: str, base_url: str, api_key: str | None, stream: bool) -> None:
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.stream = stream
        self._client = http_client(self.url)
        self._tools: tuple[list[dict[str, Any]], msgspec.Raw] | None = None

    def body(self, request: LlmRequest) -> bytes:
        """The bytes sent, in one encoding; an agent's tools (the same list at each of its calls) encoded once."""
        kept = self._tools
        if request.tools and (kept is None or kept[0] is not request.tools):
            kept = self._tools = (request.tools, msgspec.Raw(_encode(tool_entries(request.tools))))
        tools = kept[1] if request.tools and kept is not None else None
        return _encode(request_body(self.model, request, self.stream, tools))

    async def complete(self, request: LlmRequest) -> LlmResponse:
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        try:
            resp = await self._client.post(self.body(request), headers)
        except TransportFailure as e:
            raise transport_error(self.url, e) from None
        if not resp.is_success:
            raise ProviderError(f"API error (status {resp.status_code}): {resp.text}")
        if self.stream:
            return parse_sse(resp.text.splitlines())
        try:
            data = resp.json()
        except ValueError:
            raise ProviderError("serialization error: error decoding response body") from None
        return parse_completion(data)
