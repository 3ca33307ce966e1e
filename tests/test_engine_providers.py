"""Providers (docs/engine.md#providers): SSE streaming against the oracle harness's model, the reasoning-model switch,
Anthropic's mapping, and the demo model's determinism and labels."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HARNESS, ORACLE
from tests.test_engine_conformance import ENGINE_BIN, _kinds_by_stream, _normal, _requests, _stream_key
from zymi_tui.engine.providers import anthropic, openai
from zymi_tui.engine.providers.base import LlmRequest
from zymi_tui.engine.providers.demo import DemoProvider


def _harness(out: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ZYMI_BIN", str(ENGINE_BIN))
    monkeypatch.setenv("ORACLE_OUT", str(out))
    monkeypatch.setenv("ORACLE_WORK", str(work))
    spec = importlib.util.spec_from_file_location("make_stores_for_test", HARNESS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sse_streaming_sends_the_same_bodies_and_records_the_same_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = _harness(tmp_path, tmp_path / "work", monkeypatch)
    harness.SCENARIOS["memory_sse"] = {**harness.SCENARIOS["memory"], "stream": True}
    harness.run_scenario("memory_sse")
    ours = _requests(tmp_path / "memory_sse" / "requests.jsonl")
    theirs = _requests(ORACLE / "memory" / "requests.jsonl")
    assert all(r["body"]["stream"] is True and r["body"]["stream_options"] == {"include_usage": True} for r in ours)
    assert [_normal(r["body"]) | {"model": None} for r in ours] == [
        _normal(r["body"]) | {"model": None} for r in theirs
    ]
    got = {_stream_key(s): k for s, k in _kinds_by_stream(tmp_path / "memory_sse" / "events.db").items()}
    want = {_stream_key(s): k for s, k in _kinds_by_stream(ORACLE / "memory" / "events.db").items()}
    assert got == want


def test_reasoning_models_get_max_completion_tokens_and_no_temperature() -> None:
    req = LlmRequest([{"role": "user", "content": "hi"}], [], 0.7, 1234)
    assert openai.request_body("gpt-5-mini", req, False) == {
        "model": "gpt-5-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "max_completion_tokens": 1234,
    }
    assert list(openai.request_body("gpt-4o", req, False)) == ["model", "messages", "temperature", "max_tokens"]


def test_sse_chunks_merge_tool_calls_by_index_and_keep_usage() -> None:
    chunks = [
        {"model": "m", "choices": [{"delta": {"content": "Let "}}]},
        {"model": "m", "choices": [{"delta": {"content": "me."}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read_"}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "file", "arguments": '{"pa'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'th":"x"}'}}]}}]},
        {
            "choices": [{"delta": {}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
        },
    ]
    lines = [f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]"]
    resp = openai.parse_sse(lines)
    assert resp.content == "Let me."
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [("c1", "read_file", '{"path":"x"}')]
    assert resp.finish_reason == "tool_calls" and resp.usage.input_tokens == 5 and resp.usage.output_tokens == 2


def test_anthropic_last_system_message_wins_and_maps_tool_turns() -> None:
    req = LlmRequest(
        [
            {"role": "system", "content": "You are a bot."},
            {"role": "user", "content": "go"},
            {"role": "system", "content": "[memory]\nk: v\n"},
            {
                "role": "assistant",
                "content": "Reading.",
                "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a"}'}}
                ],
            },
            {"role": "tool", "content": "data", "tool_call_id": "t1"},
        ],
        [{"name": "read_file", "description": "d", "parameters": {"type": "object"}}],
        0.7,
        100,
    )
    body = anthropic.request_body("claude", req)
    assert body["system"] == "[memory]\nk: v\n"
    assert body["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "t1",
        "name": "read_file",
        "input": {"path": "a"},
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "data"}],
    }
    assert body["tools"] == [{"name": "read_file", "description": "d", "input_schema": {"type": "object"}}]
    resp = anthropic.parse_response(
        {
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "stop_reason": "max_tokens",
            "usage": {
                "input_tokens": 3,
                "output_tokens": 4,
                "cache_read_input_tokens": 5,
                "cache_creation_input_tokens": 6,
            },
        }
    )
    assert resp.content == "ab" and resp.finish_reason == "length"
    assert (resp.usage.input_tokens, resp.usage.cached_input_tokens, resp.usage.cache_creation_tokens) == (14, 5, 6)


def test_demo_model_is_deterministic_labelled_and_uses_only_offered_tools() -> None:
    tools = [{"name": n, "description": "", "parameters": {}} for n in ("read_file", "execute_shell_command")]

    async def conversation() -> list[tuple[str | None, list[str]]]:
        demo = DemoProvider()
        out = []
        for _ in range(30):
            resp = await demo.complete(
                LlmRequest(
                    [{"role": "system", "content": "s"}, {"role": "user", "content": "audit all"}], tools, 0.7, 10
                )
            )
            out.append((resp.content, [c.name + c.arguments for c in resp.tool_calls]))
            if not resp.tool_calls:
                break
        return out

    first, second = asyncio.run(conversation()), asyncio.run(conversation())
    assert first == second
    assert len(first) > 5 and not first[-1][1]
    assert all((content or "").startswith("[demo model]") for content, _ in first)
    assert all(call.startswith(("read_file", "execute_shell_command")) for _, calls in first for call in calls)


def test_no_api_key_for_anthropic_suggests_the_demo_model() -> None:
    from zymi_tui.engine.config import LlmConfig
    from zymi_tui.engine.providers import ProviderConfigError, build_provider

    with pytest.raises(ProviderConfigError) as e:
        build_provider(LlmConfig(provider="anthropic", model="claude"))
    assert "requires an api_key" in str(e.value) and "provider: demo" in str(e.value)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
