"""`collect` against real producers: the official OpenAI Python SDK, traced by the official
instrumentation (opentelemetry-instrumentation-openai-v2), by OpenInference's or by OpenLLMetry's
(their attribute names differ), exporting OTLP/HTTP
protobuf to a real `zymi-tui collect` process, runs a tool-using agent loop against a fake
OpenAI-compatible server that records every request body (tests/otel/).

The answer key is what the server received, not anything zymi-tui computed: every call's recorded
context (read back by the real `zymi events --raw`) has the body's message count and content bytes,
and the replay rebuilds exactly the body's messages; the real `zymi verify` checks the hash chains.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import requires_zymi, zymi_bin, zymi_tui_bin
from tests.waiting import LIMIT

ROOT = Path(__file__).resolve().parent.parent
CONTENT_ON = {
    # the GenAI conventions' newest form, content on the span's attributes (docs/telemetry-in.md)
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
}


def _wait_line(proc: subprocess.Popen[str], pattern: str) -> re.Match[str]:
    assert proc.stdout is not None
    for _ in range(20):
        line = proc.stdout.readline()
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"no line matching {pattern!r} from {proc.args}")


@contextlib.contextmanager
def collector(folder: Path) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    """A fake OpenAI server and a real `zymi-tui collect` into `folder`: (base URL, OTLP endpoint, the
    collector's process, stopped with Ctrl-C on the way out)."""
    bodies, port_file = folder / "bodies.jsonl", folder / "port"
    fake = subprocess.Popen([sys.executable, "-m", "tests.otel.fake_openai", str(port_file), str(bodies)], cwd=ROOT)
    collect = subprocess.Popen(
        [zymi_tui_bin(), "collect", "--port", "0", "-d", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        endpoint = _wait_line(collect, r"(http://127\.0\.0\.1:\d+/v1/traces)")[1]
        deadline = time.monotonic() + LIMIT
        while not (port_file.exists() and port_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/v1", endpoint, collect
    finally:
        fake.kill()
        fake.wait()
        if collect.poll() is None:
            collect.send_signal(signal.SIGINT)
            collect.communicate(timeout=30)


def agent(base: str, endpoint: str, instrumentation: str, *flags: str, env: dict[str, str] = CONTENT_ON) -> None:
    """The agent loop, a process of its own, its spans sent to `endpoint`."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.otel.agent_loop", base, endpoint, instrumentation, *flags],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def run_agent(folder: Path, instrumentation: str, *flags: str) -> tuple[list[dict[str, Any]], str, str]:
    """The agent loop through a real collector into `folder`'s store: the bodies the server received,
    the collector's output, and `zymi events --raw` of the LLM calls read while it still ran."""
    with collector(folder) as (base, endpoint, collect):
        agent(base, endpoint, instrumentation, *flags)
        live = zymi(folder, "events", "--raw", "-k", "llm_call_started", "-l", "1000").stdout
        collect.send_signal(signal.SIGINT)
        out, err = collect.communicate(timeout=30)
    bodies = (folder / "bodies.jsonl").read_text().splitlines()
    return [json.loads(line) for line in bodies], out + err, live


def zymi(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    zb = zymi_bin()
    assert zb is not None
    return subprocess.run([zb, *args, "-d", str(folder)], capture_output=True, text=True, timeout=60, cwd=folder)


def replay(folder: Path, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [zymi_tui_bin(), "replay", str(folder), "--json", "--messages", *args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return [r for r in rows if r.get("kind") == "agent"]


def content_bytes(m: dict[str, Any]) -> int:
    """zymi's count, worked out here from the wire body: the UTF-8 bytes of each message's text."""
    c = m.get("content")
    if isinstance(c, list):
        c = "".join(p.get("text", "") for p in c)
    return len(c.encode()) if isinstance(c, str) else 0


def wire_shape(m: dict[str, Any]) -> tuple[Any, ...]:
    """What the context holds of a wire message: role, text, tool-call ids, the result's call id."""
    return (
        m["role"],
        m.get("content") or None,
        tuple(c["id"] for c in m.get("tool_calls") or []),
        m.get("tool_call_id"),
    )


CASES = [
    pytest.param("openai-v2", (), id="openai-v2"),
    pytest.param("openai-v2", ("--bare",), id="openai-v2-bare"),
    pytest.param("openinference", (), id="openinference"),
    pytest.param("openllmetry", (), id="openllmetry"),
    pytest.param("openai-v2", ("--stream",), id="openai-v2-stream"),
    pytest.param("openinference", ("--stream",), id="openinference-stream"),
    pytest.param("openllmetry", ("--stream",), id="openllmetry-stream"),
]


@requires_zymi
@pytest.mark.parametrize(("instrumentation", "flags"), CASES)
def test_a_real_instrumented_agent_is_recorded_exactly(tmp_path: Path, instrumentation: str, flags: tuple[str]) -> None:
    bodies, output, live = run_agent(tmp_path, instrumentation, *flags)
    assert len(bodies) == 4  # 3 tool rounds and a final answer
    # written live: the real zymi read every call while the collector still ran
    started = [json.loads(line)["kind"]["data"] for line in live.splitlines()]
    assert [(s["message_count"], s["approx_context_chars"]) for s in started] == [
        (len(b["messages"]), sum(content_bytes(m) for m in b["messages"])) for b in bodies
    ]
    verified = zymi(tmp_path, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert re.search(r"Verified \d+ event\(s\) across 2 stream\(s\)", verified.stdout)
    rows = replay(tmp_path)
    assert [[wire_shape(m) for m in r["messages"]] for r in rows] == [
        [wire_shape(m) for m in b["messages"]] for b in bodies
    ]
    assert [(r["chars"], r["message_count"]) for r in rows] == [
        (sum(content_bytes(m) for m in b["messages"]), len(b["messages"])) for b in bodies
    ]
    assert "4 model calls in 1 runs, 3 tool results" in output


@requires_zymi
def test_the_what_if_masks_older_tool_results_of_a_foreign_agent(tmp_path: Path) -> None:
    bodies, _, _ = run_agent(tmp_path, "openai-v2")
    last = replay(tmp_path, "--set", "observation_window=1")[-1]
    sent = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    tools = [m for m in last["messages"] if m["role"] == "tool"]
    assert len(tools) == len(sent) == 3
    for i, (ours, theirs) in enumerate(zip(tools[:2], sent[:2], strict=True), start=1):
        n = len(theirs["content"].encode())
        assert ours["content"] == f'[masked: read_file("notes/{i}.txt") → ok, {n} chars]'
    assert tools[2]["content"] == sent[2]["content"]  # the last turn's result is kept whole
    assert last["whatif"] and last["chars"] < sum(content_bytes(m) for m in bodies[-1]["messages"])
    advised = subprocess.run([zymi_tui_bin(), "advise", str(tmp_path), "--format", "json"], capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert advised.returncode == 0, advised.stderr
    advice = json.loads(advised.stdout)
    assert "4 calls are a foreign agent's" in advice["caveat"] and "exactly what it sent" in advice["caveat"]


async def test_the_agent_appears_live_in_the_dashboard(tmp_path: Path) -> None:
    """observe open on the store `collect` writes, then the agent runs: its run and its four calls
    arrive on the dashboard while it is open."""
    from tests.tui_support import make_app, settle
    from zymi_tui.tui.plot import ContextPlot
    from zymi_tui.tui.source import AGENT_CAPS

    db = tmp_path / ".zymi" / "events.db"
    with collector(tmp_path) as (base, endpoint, _):
        app = make_app(db)
        async with app.run_test(size=(120, 40)) as pilot:
            main = await settle(app, pilot)
            assert main.runs.rows == []
            await asyncio.to_thread(agent, base, endpoint, "openai-v2")
            deadline = time.monotonic() + LIMIT
            while time.monotonic() < deadline and not main.runs.summaries:
                await pilot.pause(0.05)
            await pilot.press("n")  # follow the newest run
            main = await settle(app, pilot)
            assert main.selected is not None and main.selected.stream_id.startswith("trace-")
            plot = main.query_one(ContextPlot)
            while time.monotonic() < deadline and len(plot.all_calls()) < 4:
                await pilot.pause(0.05)
            assert len(plot.all_calls()) == 4, [(c.global_id, c.stream_id[-12:]) for c in plot.all_calls()]
            assert main.knob_source == AGENT_CAPS  # the banner: whose caps these calls had


@requires_zymi
def test_spans_without_content_are_counted_and_named_not_guessed(tmp_path: Path) -> None:
    """`CAPTURE_MESSAGE_CONTENT=true` (not `span_only`): opentelemetry-instrumentation-openai-v2 2.4b0 then
    puts no message on the span. No call is made up: none is written, and the four are named."""
    no_content = {**CONTENT_ON, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    with collector(tmp_path) as (base, endpoint, collect):
        agent(base, endpoint, "openai-v2", env=no_content)
        collect.send_signal(signal.SIGINT)
        _, err = collect.communicate(timeout=30)
    assert "4 model-call spans without content, skipped (chat fake-model x4)" in err
    assert zymi(tmp_path, "events", "--raw", "-k", "llm_call_started").stdout == ""
