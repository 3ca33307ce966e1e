"""An LHAR entry's line, assembled from its parts' JSON texts in the order and form
`json.dumps(entry, ensure_ascii=False)` writes its mapping: strings the store holds go through the
encoder's string escaper (`value_text`), ids and timestamps are hex digits and ISO text (never escaped),
numbers are written as the encoder writes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from zymi_tui import __version__
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.export_calls import Step, hex_id
from zymi_tui.telemetry.lhar_body import BodyText
from zymi_tui.telemetry.lhar_text import iso, uuid_text, value_text

COLLECTOR = "zymi-tui"
_VERSION = value_text(__version__)
_SECURITY = '"security": {"alerts": [], "summary": {"high": 0, "medium": 0, "info": 0}}'


class LharEntry(NamedTuple):
    """One call's entry: the conversation (session) it belongs to, its timestamp, its line."""

    conversation: str
    timestamp: str
    line: bytes  # UTF-8 JSON and a newline


def _timings(r: CallContext, output_tokens: int) -> str:
    if r.done_ts_ns is None or r.ts_ns is None:
        return "null"
    elapsed = (r.done_ts_ns - r.ts_ns) / 1e6
    tps = output_tokens / (elapsed / 1000) if elapsed > 0 else None
    e = value_text(elapsed)
    return (f'{{"send_ms": 0, "wait_ms": {e}, "receive_ms": 0, "total_ms": {e}, '
            f'"tokens_per_second": {value_text(tps)}}}')  # fmt: skip


def entry_line(
    r: CallContext,
    step: Step,
    role: str,
    sequence: int,
    provider: str,
    window: int,
    body: BodyText,
    composition: tuple[str, dict[str, int], str],
    growth: tuple[int | None, bool],
    messages: Sequence[bytes] | None,
) -> LharEntry:
    """The entry of call `r` made by `step`: `composition` is lhar_export.composition's (the items of the
    composition list, the tokens by category, the items of the tool calls list), `growth` the tokens added
    since the step's last agent call (None for its first) and whether a compaction came just before,
    `messages` the JSON of each message of the request body (None: no body)."""
    comp, tokens, tool_calls = composition
    added, detected = growth
    total = sum(tokens.values())
    inp, outp = r.recorded_input_tokens or 0, r.recorded_output_tokens or 0
    timestamp = iso(r.ts_ns)
    request = b"null" if messages is None else body.with_messages(messages)
    finish = f"[{value_text(r.finish_reason)}]" if r.finish_reason else "[]"
    system, prompt = tokens["system_prompt"], tokens["tool_definitions"]
    text = (
        f'{{"type": "entry", "id": "{uuid_text(hex_id(f"{r.stream_id}|{r.sequence}|{r.global_id}", 32))}", '
        f'"trace_id": "{step.run.trace_id}", "span_id": "{hex_id(f"call|{r.stream_id}|{r.sequence}", 16)}", '
        f'"parent_span_id": "{step.span_id}", "timestamp": "{timestamp}", "sequence": {sequence}, '
        f'"source": {{"tool": "zymi", "tool_version": null, "agent_role": "{role}", "collector": "{COLLECTOR}", '
        f'"collector_version": {_VERSION}}}, '
        f'"gen_ai": {{"system": {value_text(provider)}, "request": {body.request}, '
        f'"response": {{"model": null, "finish_reasons": {finish}}}, "usage": {{"input_tokens": {value_text(inp)}, '
        f'"output_tokens": {value_text(outp)}, "total_tokens": {value_text(inp + outp)}}}}}, '
        f'"usage_ext": {{"cache_read_tokens": {value_text(r.recorded_cached_tokens or 0)}, '
        f'"cache_write_tokens": {value_text(r.recorded_cache_creation_tokens or 0)}, "thinking_tokens": 0, '
        f'"cost_usd": null}}, "http": {body.http}, "timings": {_timings(r, outp)}, '
        f'"transfer": {{"request_bytes": {len(request) if messages is not None else 0}, "response_bytes": 0, '
        f'"compressed": false}}, "context_lens": {{"window_size": {value_text(window)}, '
        f'"utilization": {value_text(round(total / window, 6) if window else 0)}, "system_tokens": {system}, '
        f'"tools_tokens": {prompt}, "messages_tokens": {total - system - prompt}, "composition": [{comp}], '
        f'"growth": {{"tokens_added_this_turn": {value_text(added)}, "cumulative_tokens": {total}, '
        f'"compaction_detected": {"true" if detected else "false"}}}, "tool_definitions": {body.definitions}, '
        f'"tool_calls": [{tool_calls}], {_SECURITY}}}, "raw": {{"request_body": '
    )
    line = b"".join((text.encode(), request, b', "response_body": null}}\n'))
    return LharEntry(step.run.stream, timestamp, line)
