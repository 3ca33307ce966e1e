"""What a model-call span says was sent and answered, in zymi's messages (docs/telemetry-in.md#content).

Three conventions carry content, each its own way:
- the GenAI semantic conventions (`gen_ai.input.messages` / `gen_ai.output.messages`, JSON with typed
  parts; `gen_ai.system_instructions`), as opentelemetry-instrumentation-openai-v2 writes them;
- OpenInference (`llm.input_messages.<i>.message.role|content|tool_calls...`, flattened);
- OpenLLMetry (`gen_ai.prompt.<i>.role|content|tool_calls...`, `gen_ai.completion.<i>...`).
An OpenAI chat-completions body (LHAR's `raw.request_body`) is read the same way. A span without any
of them has no content: it is counted and named by the caller, never guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    TokenUsage,
    ToolCallInfo,
    ToolResultMessage,
    UserMessage,
)

GEN_AI, OPENINFERENCE, OPENLLMETRY, OPENAI_BODY = "gen_ai", "openinference", "openllmetry", "openai_body"


@dataclass(frozen=True)
class CallContent:
    """A model call's input (as sent), its answer and its figures."""

    convention: str
    input: tuple[MessageModel, ...]
    output: AssistantMessage | None  # None: the span says nothing of the answer
    usage: TokenUsage | None
    finish_reason: str | None
    model: str | None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _arguments(value: Any) -> str:
    """Tool-call arguments as the wire carries them: a JSON string (an object is written back as JSON)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def message(
    role: str, text: str | None, calls: Iterable[ToolCallInfo] = (), call_id: str | None = None
) -> MessageModel:
    """zymi's message for one wire message (`developer` is the newer name of `system`)."""
    if role in ("system", "developer"):
        return SystemMessage(content=text or "")
    if role == "tool":
        return ToolResultMessage(tool_call_id=call_id or "", content=text or "")
    if role == "assistant":
        return AssistantMessage(content=text, tool_calls=tuple(calls))
    return UserMessage(content=text or "")


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def usage_of(inp: Any, out: Any, cached: Any = None, created: Any = None) -> TokenUsage | None:
    i, o = _int(inp), _int(out)
    if i is None and o is None:
        return None
    return TokenUsage(
        input_tokens=i or 0, output_tokens=o or 0, cached_input_tokens=_int(cached) or 0,
        cache_creation_tokens=_int(created) or 0,
    )  # fmt: skip


# -- the GenAI semantic conventions -------------------------------------------------------------------
def _parts_message(m: Mapping[str, Any]) -> MessageModel:
    role = str(m.get("role") or "user")
    texts: list[str] = []
    calls: list[ToolCallInfo] = []
    call_id = None
    for p in m.get("parts") or []:
        if not isinstance(p, Mapping):
            continue
        kind = p.get("type")
        if kind == "text":
            texts.append(_text(p.get("content", "")))
        elif kind == "tool_call":
            calls.append(ToolCallInfo(id=str(p.get("id") or ""), name=str(p.get("name") or ""),
                                      arguments=_arguments(p.get("arguments"))))  # fmt: skip
        elif kind == "tool_call_response":
            call_id = str(p.get("id") or "")
            texts.append(_text(p.get("response", "")))
    text = "".join(texts) if texts or role != "assistant" else None
    return message(role, text, calls, call_id)


def _json_list(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, list) else None


def _gen_ai(a: Mapping[str, Any]) -> CallContent | None:
    raw = _json_list(a.get("gen_ai.input.messages"))
    if raw is None:
        return None
    messages = [_parts_message(m) for m in raw if isinstance(m, Mapping)]
    system = _json_list(a.get("gen_ai.system_instructions"))
    if system:
        text = "".join(
            _text(p.get("content", "")) for p in system if isinstance(p, Mapping) and p.get("type") == "text"
        )
        messages.insert(0, SystemMessage(content=text))
    outputs = _json_list(a.get("gen_ai.output.messages")) or []
    first = next((m for m in outputs if isinstance(m, Mapping)), None)
    output = _parts_message(first) if first is not None else None
    finish = first.get("finish_reason") if first is not None else None
    return CallContent(
        GEN_AI, tuple(messages), output if isinstance(output, AssistantMessage) else None, _gen_aiusage_of(a),
        str(finish) if finish else _first(a.get("gen_ai.response.finish_reasons")), _model(a),
    )  # fmt: skip


def _gen_aiusage_of(a: Mapping[str, Any]) -> TokenUsage | None:
    return usage_of(
        a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens")),
        a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens")),
        a.get("gen_ai.usage.cache_read.input_tokens", a.get("gen_ai.usage.cache_read_input_tokens")),
        a.get("gen_ai.usage.cache_creation.input_tokens", a.get("gen_ai.usage.cache_creation_input_tokens")),
    )


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return None if value is None else str(value)


def _model(a: Mapping[str, Any]) -> str | None:
    m = a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or a.get("llm.model_name")
    return None if m is None else str(m)


# -- flattened conventions: OpenInference and OpenLLMetry ----------------------------------------------
def _indexed(a: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """`<prefix>.<i>.<rest>` attributes grouped by i (each a dict of rest -> value)."""
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)$")
    out: dict[int, dict[str, Any]] = {}
    for key, value in a.items():
        m = pattern.match(key)
        if m:
            out.setdefault(int(m[1]), {})[m[2]] = value
    return dict(sorted(out.items()))


def _flat_message(
    fields: Mapping[str, Any], head: str, call_head: str, call_keys: tuple[str, str, str]
) -> MessageModel:
    """One flattened message: `head` is `message.` (OpenInference) or `` (OpenLLMetry)."""
    role = str(fields.get(f"{head}role") or "user")
    text = fields.get(f"{head}content")
    if text is None:  # OpenInference's multi-part `contents`
        parts = _indexed(fields, f"{head}contents")
        texts = [
            str(p.get("message_content.text", ""))
            for p in parts.values()
            if p.get("message_content.type", "text") == "text"
        ]
        text = "".join(texts) if texts else None
    calls = [
        ToolCallInfo(
            id=str(c.get(call_keys[0]) or ""),
            name=str(c.get(call_keys[1]) or ""),
            arguments=_arguments(c.get(call_keys[2])),
        )
        for c in _indexed(fields, f"{head}{call_head}").values()
    ]
    call_id = fields.get(f"{head}tool_call_id")
    return message(role, None if text is None else _text(text), calls, None if call_id is None else str(call_id))


OI_CALL = ("tool_call.id", "tool_call.function.name", "tool_call.function.arguments")
TL_CALL = ("id", "name", "arguments")


def _openinference(a: Mapping[str, Any]) -> CallContent | None:
    inputs = _indexed(a, "llm.input_messages")
    if not inputs:
        return None
    messages = tuple(_flat_message(f, "message.", "tool_calls", OI_CALL) for f in inputs.values())
    outputs = _indexed(a, "llm.output_messages")
    output = _flat_message(outputs[min(outputs)], "message.", "tool_calls", OI_CALL) if outputs else None
    usage = usage_of(a.get("llm.token_count.prompt"), a.get("llm.token_count.completion"),
                   a.get("llm.token_count.prompt_details.cache_read"),
                   a.get("llm.token_count.prompt_details.cache_write"))  # fmt: skip
    finish = a.get("llm.finish_reason") or _output_finish(a.get("output.value"))
    return CallContent(
        OPENINFERENCE, messages, output if isinstance(output, AssistantMessage) else None, usage,
        None if finish is None else str(finish), _model(a),
    )  # fmt: skip


def _output_finish(value: Any) -> str | None:
    try:
        body: Any = json.loads(value) if isinstance(value, str) else None
        return str(body["choices"][0]["finish_reason"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _openllmetry(a: Mapping[str, Any]) -> CallContent | None:
    inputs = _indexed(a, "gen_ai.prompt")
    if not inputs:
        return None
    messages = tuple(_flat_message(f, "", "tool_calls", TL_CALL) for f in inputs.values())
    outputs = _indexed(a, "gen_ai.completion")
    first = outputs[min(outputs)] if outputs else None
    output = _flat_message(first, "", "tool_calls", TL_CALL) if first is not None else None
    finish = first.get("finish_reason") if first is not None else None
    return CallContent(
        OPENLLMETRY, messages, output if isinstance(output, AssistantMessage) else None, _gen_aiusage_of(a),
        str(finish) if finish else _first(a.get("gen_ai.response.finish_reasons")), _model(a),
    )  # fmt: skip


def call_content(attrs: Mapping[str, Any]) -> CallContent | None:
    """The content a model-call span carries, in whichever convention it is written; None without it."""
    return _gen_ai(attrs) or _openinference(attrs) or _openllmetry(attrs)


# -- OpenAI chat-completions bodies (LHAR's raw request/response) ---------------------------------------
def _wire_message(m: Mapping[str, Any]) -> MessageModel:
    content = m.get("content")
    if isinstance(content, list):  # content parts: their text, joined (images are not counted by zymi)
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p)
    calls = []
    for c in m.get("tool_calls") or []:
        if isinstance(c, Mapping):
            fn: Mapping[str, Any] = c["function"] if isinstance(c.get("function"), Mapping) else {}
            calls.append(ToolCallInfo(id=str(c.get("id") or ""), name=str(fn.get("name") or ""),
                                      arguments=_arguments(fn.get("arguments"))))  # fmt: skip
    call_id = m.get("tool_call_id")
    return message(str(m.get("role") or "user"), None if content is None else _text(content), calls,
                   None if call_id is None else str(call_id))  # fmt: skip


def body_content(request: Any, response: Any) -> CallContent | None:
    """An OpenAI chat-completions request body (and its response body, if any)."""
    if not isinstance(request, Mapping) or not isinstance(request.get("messages"), list):
        return None
    messages = tuple(_wire_message(m) for m in request["messages"] if isinstance(m, Mapping))
    output: MessageModel | None = None
    finish = usage = None
    if isinstance(response, Mapping):
        choices = response.get("choices") or []
        if choices and isinstance(choices[0], Mapping) and isinstance(choices[0].get("message"), Mapping):
            output = _wire_message({"role": "assistant", **choices[0]["message"]})
            finish = choices[0].get("finish_reason")
        u = response.get("usage")
        if isinstance(u, Mapping):
            d = u.get("prompt_tokens_details")
            details: Mapping[str, Any] = d if isinstance(d, Mapping) else {}
            usage = usage_of(u.get("prompt_tokens"), u.get("completion_tokens"), details.get("cached_tokens"))
    model = request.get("model")
    return CallContent(
        OPENAI_BODY, messages, output if isinstance(output, AssistantMessage) else None, usage,
        None if finish is None else str(finish), None if model is None else str(model),
    )  # fmt: skip


def tool_result(attrs: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """A tool span's call id and result text (GenAI conventions, OpenInference, OpenLLMetry), if it says."""
    call_id = attrs.get("gen_ai.tool.call.id", attrs.get("tool_call.id", attrs.get("tool.call.id")))
    result = attrs.get("gen_ai.tool.call.result", attrs.get("output.value", attrs.get("traceloop.entity.output")))
    return (None if call_id is None else str(call_id)), (None if result is None else _text(result))
