"""`import FILE`: traces people already have, into a zymi store (docs/telemetry-in.md#files).

- OTLP/JSON: one `ExportTraceServiceRequest` object, or one per line (the OpenTelemetry Collector's
  file exporter), or a JSON array of them;
- LHAR (context-lens): JSON lines of `session` and `entry` records, or the `{"lhar": {...}}` wrapper.
  An entry's content is its `raw.request_body` (an OpenAI chat-completions body); an entry whose
  response body was not kept takes its answer from the next entry of the same session and agent: the
  message right after this entry's input there, when it is an assistant message and the roles before
  it are this input's (an agent that masks old messages still appends); nothing from anywhere else.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from zymi_tui.events.messages import AssistantMessage
from zymi_tui.events.timestamps import parse_timestamp_ns
from zymi_tui.telemetry.messages_in import CallContent, body_content, usage_of
from zymi_tui.telemetry.spans_in import InSpan, SpansError, decode_json_object
from zymi_tui.telemetry.spans_store import SpanSink

MAX_FILE = 1024 * 1024 * 1024


def _documents(text: str) -> Iterator[Any]:
    """The JSON values of a file: one document, or one per line."""
    try:
        yield json.loads(text)
        return
    except ValueError:
        pass
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield json.loads(line)
            except ValueError as e:
                raise SpansError(f"line {n}: invalid JSON: {e}") from None


def file_format(docs: list[Any]) -> str:
    first = docs[0] if docs else None
    if isinstance(first, list):
        first = first[0] if first else None
    if isinstance(first, dict) and ("resourceSpans" in first or "resource_spans" in first):
        return "otlp"
    if isinstance(first, dict) and ("lhar" in first or first.get("type") in ("session", "entry")):
        return "lhar"
    raise SpansError("neither OTLP/JSON (`resourceSpans`) nor LHAR (`session`/`entry` lines, or `lhar`)")


def _lhar_entries(docs: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in docs:
        if isinstance(d, dict) and isinstance(d.get("lhar"), dict):
            out += [e for e in d["lhar"].get("entries") or [] if isinstance(e, dict)]
        elif isinstance(d, dict) and d.get("type") == "entry":
            out.append(d)
    return out


def _lhar_span(e: dict[str, Any]) -> InSpan:
    try:
        start = parse_timestamp_ns(str(e["timestamp"]))
    except (KeyError, ValueError):
        raise SpansError(f"LHAR entry {e.get('id')!r}: no valid `timestamp`") from None
    total = (e.get("timings") or {}).get("total_ms") or 0
    source = e.get("source") or {}
    role = str(source.get("agent_role") or "chat")
    return InSpan(
        trace_id=str(e.get("trace_id") or ""), span_id=str(e.get("span_id") or e.get("id") or ""),
        parent_id=e.get("parent_span_id") or None, name=f"lhar {role}", start_ns=start,
        end_ns=start + int(float(total) * 1e6), attrs={"gen_ai.operation.name": "chat", "gen_ai.agent.name": role},
        service=str(source.get("tool") or "lhar"),
    )  # fmt: skip


def _lhar_content(e: dict[str, Any]) -> CallContent | None:
    raw = e.get("raw") or {}
    content = body_content(raw.get("request_body"), raw.get("response_body"))
    if content is None:
        return None
    g = e.get("gen_ai") or {}
    if content.usage is None and isinstance(g.get("usage"), dict):
        content = replace(content, usage=usage_of(g["usage"].get("input_tokens"), g["usage"].get("output_tokens")))
    finish = (g.get("response") or {}).get("finish_reasons") or []
    if content.finish_reason is None and finish:
        content = replace(content, finish_reason=str(finish[0]))
    return content


def _answers_from_next(spans: list[InSpan], contents: dict[str, CallContent]) -> None:
    """An entry without its response: the assistant message right after its input in the next entry of
    the same session and agent, when the roles before it are this input's."""
    by_agent: dict[tuple[str, str], list[InSpan]] = {}
    for s in spans:
        by_agent.setdefault((s.trace_id, s.name), []).append(s)
    for members in by_agent.values():
        members.sort(key=lambda s: s.start_ns)
        for a, b in itertools.pairwise(members):
            ca, cb = contents.get(a.span_id), contents.get(b.span_id)
            if ca is None or cb is None or ca.output is not None:
                continue
            n = len(ca.input)
            answer = cb.input[n] if len(cb.input) > n else None
            roles = [m.role for m in ca.input] == [m.role for m in cb.input[:n]]
            if isinstance(answer, AssistantMessage) and roles:
                contents[a.span_id] = replace(ca, output=answer)


async def import_file(path: Path, sink: SpanSink) -> str:
    """Read `path` into `sink`; returns the format read (`otlp` or `lhar`)."""
    try:
        if path.stat().st_size > MAX_FILE:
            raise SpansError(f"{path}: larger than {MAX_FILE} bytes")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SpansError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise SpansError(f"{path}: not UTF-8 text") from None
    docs = list(_documents(text))
    fmt = file_format(docs)
    if fmt == "otlp":  # one batch: every span of the file known at once (agent names, tool spans)
        spans = [
            s for d in docs for request in (d if isinstance(d, list) else [d]) for s in decode_json_object(request)
        ]
        await sink.add(spans)
    else:
        entries = _lhar_entries(docs)
        spans = [_lhar_span(e) for e in entries]
        contents = {s.span_id: c for s, e in zip(spans, entries, strict=True) if (c := _lhar_content(e)) is not None}
        _answers_from_next(spans, contents)
        await sink.add(spans, contents)
    await sink.close()
    return fmt
