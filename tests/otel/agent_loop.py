"""A small tool-using agent on the official OpenAI Python SDK, traced by an OpenTelemetry instrumentation.

Run as a process: `python -m tests.otel.agent_loop BASE_URL OTLP_ENDPOINT INSTRUMENTATION [--bare] [--stream]`,
where INSTRUMENTATION is `openai-v2` (opentelemetry-instrumentation-openai-v2), `openinference`
(openinference-instrumentation-openai) or `openllmetry` (Traceloop's opentelemetry-instrumentation-openai).
The application wraps the loop in an `invoke_agent` span and each tool run in an `execute_tool` span, as
agent frameworks do; `--bare` makes neither (each model call is then a trace of its own, as with the SDK
alone); `--stream` asks for streamed answers. Spans go out over OTLP/HTTP protobuf to OTLP_ENDPOINT
(`http://127.0.0.1:PORT/v1/traces`); the process flushes them before it exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
SYSTEM = "You are a careful file reader — use read_file, then answer in one line."
TASK = "Read notes/1.txt, notes/2.txt and notes/3.txt and tell me what they say."


def read_file(path: str) -> str:
    return f"contents of {path}: héllo from file {path[-5]} — ünïcode, " + "padding text " * 40


def ask(client: Any, messages: list[dict[str, object]], stream: bool) -> Any:
    """One model call; with `stream`, the answer is put together from its chunks (as agents do)."""
    if not stream:
        return client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS).choices[0].message
    text, calls = "", {}
    kwargs = {"stream_options": {"include_usage": True}}
    for chunk in client.chat.completions.create(
        model="fake-model", messages=messages, tools=TOOLS, stream=True, **kwargs
    ):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for c in choice.delta.tool_calls or []:
                calls.setdefault(c.index, c)
    from openai.types.chat import ChatCompletionMessage

    tool_calls = [
        {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in calls.values()
    ]
    return ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": text or None, "tool_calls": tool_calls or None}
    )


def main() -> None:
    base_url, endpoint, which = sys.argv[1], sys.argv[2], sys.argv[3]
    bare = "--bare" in sys.argv[4:]
    stream = "--stream" in sys.argv[4:]
    token = os.environ.get("COLLECT_TOKEN")
    headers = {"authorization": f"Bearer {token}"} if token else None
    provider = TracerProvider(resource=Resource.create({"service.name": f"agent-{which}"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, headers=headers)))
    trace.set_tracer_provider(provider)
    if which == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif which == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        OIInstrumentor().instrument(tracer_provider=provider)
    else:  # OpenLLMetry's (Traceloop), pip opentelemetry-instrumentation-openai
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as TLInstrumentor

        TLInstrumentor().instrument(tracer_provider=provider)
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="test-key")
    tracer = trace.get_tracer("agent_loop")
    messages: list[dict[str, object]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    agent_span = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "reader"}
    with (
        contextlib.nullcontext() if bare else tracer.start_as_current_span("invoke_agent reader", attributes=agent_span)
    ):
        for _ in range(8):
            msg = ask(client, messages, stream)
            messages.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls:
                break
            for call in msg.tool_calls:
                args = json.loads(call.function.arguments)
                tool_span = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.function.name,
                             "gen_ai.tool.call.id": call.id}  # fmt: skip
                name = f"execute_tool {call.function.name}"
                with contextlib.nullcontext() if bare else tracer.start_as_current_span(name, attributes=tool_span):
                    result = read_file(args["path"])
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    provider.shutdown()


if __name__ == "__main__":
    main()
