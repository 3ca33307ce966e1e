"""Benchmark `collect`: OTLP/HTTP batches in, zymi events out, against bare appends measured in the same run.

    .venv/bin/python benchmarks/bench_collect.py [--traces 200] [--calls 8] [--repeats 3]

Each trace is one agent run of the official instrumentation's shape: an `invoke_agent` span, `--calls`
chat spans whose `gen_ai.input.messages` carry the whole growing conversation (system, task, and each
earlier tool call and ~600-byte tool result), and an `execute_tool` span per tool call; one trace per
OTLP/HTTP protobuf request, as a BatchSpanProcessor flushing per run sends them.

1. A real `zymi-tui collect` process on loopback, the requests POSTed one after another (each is
   answered once its events are committed): requests, model calls and events per second.
2. Baseline: the same number of events appended one by one by the store's own writer (SqliteWriter,
   one transaction each, as collect and zymi append), with no decoding or mapping.
Figures: median (min) of the repeats, and the ratio of medians (collect's time per event over the
writer's): what decoding, mapping and HTTP add to the append itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from zymi_tui.events.kinds import Event, LlmCallStarted
from zymi_tui.events.sqlite_write import SqliteWriter

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent / "zymi-tui"


def _kv(key: str, value: str | int) -> KeyValue:
    v = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=value)
    return KeyValue(key=key, value=v)


def _text(role: str, text: str) -> dict[str, object]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def trace_request(n: int, calls: int) -> tuple[bytes, int]:
    """One agent run as an OTLP protobuf request; and the events collect writes for it."""
    trace_id = n.to_bytes(16, "big")
    root = (10**6 + n).to_bytes(8, "big")
    t0 = 1_796_000_000_000_000_000 + n * 10**9
    history: list[dict[str, object]] = [_text("system", "You are a coding agent."), _text("user", f"task {n}")]
    agent = [_kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", "coder")]
    spans = [Span(trace_id=trace_id, span_id=root, name="invoke_agent coder", start_time_unix_nano=t0,
                  end_time_unix_nano=t0 + 10**9 - 1, attributes=agent)]  # fmt: skip
    events = 3  # PipelineRequested, WorkflowStarted, WorkflowNodeStarted
    for i in range(calls):
        last = i == calls - 1
        call = {"type": "tool_call", "id": f"c{i}", "name": "read_file", "arguments": {"path": f"f{i}.py"}}
        answer = {"role": "assistant", "parts": [_text("assistant", "done")["parts"][0] if last else call]}
        start = t0 + (i + 1) * 10**7
        attrs = [_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", "m"),
                 _kv("gen_ai.input.messages", json.dumps(history)), _kv("gen_ai.output.messages", json.dumps([answer])),
                 _kv("gen_ai.usage.input_tokens", 100 * (i + 1)), _kv("gen_ai.usage.output_tokens", 10)]  # fmt: skip
        spans.append(Span(trace_id=trace_id, span_id=(n * 100 + i + 1).to_bytes(8, "big"), parent_span_id=root,
                          name="chat m", start_time_unix_nano=start, end_time_unix_nano=start + 10**6,
                          attributes=attrs))  # fmt: skip
        events += 2 + (0 if last else 2)  # started, completed (+ tool requested, tool completed)
        history += [answer, {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{i}",
                                                        "response": "x = 1\n" * 100}]}]  # fmt: skip
    events += 3  # WorkflowNodeCompleted, WorkflowCompleted, PipelineCompleted
    resource = ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])
    resource.resource.attributes.append(_kv("service.name", "bench-agent"))
    return ExportTraceServiceRequest(resource_spans=[resource]).SerializeToString(), events


def through_collect(bodies: list[bytes], folder: Path) -> float:
    proc = subprocess.Popen([str(BIN), "collect", "--port", "0", "-d", str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        m = re.search(r"(http://\S+/v1/traces)", proc.stdout.readline())
        assert m, "collect did not start"
        with httpx.Client() as client:
            t = time.perf_counter()
            for body in bodies:
                r = client.post(m[1], content=body, headers={"content-type": "application/x-protobuf"})
                assert r.status_code == 200, r.text
            return time.perf_counter() - t
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


async def bare_appends(n: int, db: Path) -> float:
    writer = await SqliteWriter.open(db)
    try:
        kind = LlmCallStarted(iteration=1, message_count=2, approx_context_chars=100)
        t = time.perf_counter()
        for i in range(n):
            await writer.append(Event.new(f"run-{i // 40}:step:coder", kind, "otel", None))
        return time.perf_counter() - t
    finally:
        await writer.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=200)
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    made = [trace_request(n, args.calls) for n in range(1, args.traces + 1)]
    bodies, events = [b for b, _ in made], sum(e for _, e in made)
    mb = sum(map(len, bodies)) / 1e6
    print(
        f"{args.traces} traces x {args.calls} calls: {len(bodies)} requests, {mb:.1f} MB of protobuf, {events} events"
    )
    collect_s, bare_s = [], []
    for r in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            collect_s.append(through_collect(bodies, Path(tmp) / f"c{r}"))
            bare_s.append(asyncio.run(bare_appends(events, Path(tmp) / "bare.db")))
    c, b = statistics.median(collect_s), statistics.median(bare_s)
    calls = args.traces * args.calls
    print(f"collect (HTTP + decode + map + append): {c:.2f} s (min {min(collect_s):.2f}): "
          f"{len(bodies) / c:.0f} requests/s, {calls / c:.0f} model calls/s, {events / c:.0f} events/s")  # fmt: skip
    print(f"bare writer appends of {events} events: {b:.2f} s (min {min(bare_s):.2f}): {events / b:.0f} events/s")
    print(f"ratio collect / bare appends: {c / b:.2f}x")


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
