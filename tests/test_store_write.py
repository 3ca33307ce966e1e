"""Writing as zymi does: what we write reads back equal, and the real engine accepts it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.waiting import LIMIT
from zymi_tui.events.kinds import KNOWN_KINDS, Event, parse_kind
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.sqlite_write import SqliteWriter
from zymi_tui.events.timestamps import format_timestamp

from .conftest import requires_zymi, zymi_bin

# One payload per 0.9.3 kind, written out by hand in zymi's field order (docs/engine.md#event-kinds,
# events/mod.rs): our model must dump each one back byte for byte, and zymi must read it.
SAMPLES: dict[str, dict[str, object]] = {
    "UserMessageReceived": {"content": {"User": "hello"}, "connector": "stdin"},
    "ScheduledTaskTriggered": {"entry_id": "nightly", "task": "sweep"},
    "AgentProcessingStarted": {"conversation_id": "c1"},
    "AgentProcessingCompleted": {"conversation_id": "c1", "success": True},
    "LlmCallStarted": {"iteration": 1, "message_count": 3, "approx_context_chars": 1234},
    "LlmCallCompleted": {
        "response_message": {
            "Assistant": {"content": None, "tool_calls": [{"id": "call_1", "name": "read_file", "arguments": "{}"}]}
        },
        "has_tool_calls": True,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cached_input_tokens": 2, "cache_creation_tokens": 0},
        "content_preview": None,
        "finish_reason": "tool_calls",
    },
    "LlmCallFailed": {"iteration": 2, "error": "HTTP 500", "elapsed_ms": 40},
    "ToolCallRequested": {"tool_name": "read_file", "arguments": '{"path": "a.txt"}', "call_id": "call_1"},
    "ApprovalRequested": {
        "approval_id": "a1", "stream_id": "s", "description": "rm -rf", "explanation": None, "channel": "terminal",
    },
    "ApprovalGranted": {"approval_id": "a1", "stream_id": "s", "decided_by": "me", "reason": None},
    "ApprovalDenied": {"approval_id": "a1", "stream_id": "s", "decided_by": "me", "reason": "no"},
    "ReasoningRequested": {"request_id": "r1", "stream_id": "s", "prompt": "why?", "channel": "terminal"},
    "ReasoningAnswered": {
        "request_id": "r1", "stream_id": "s", "answer": "because", "answered_by": "me", "is_error": False,
    },
    "ToolCallCompleted": {
        "call_id": "call_1", "result": "Привет, мир", "result_preview": "Привет", "is_error": False,
        "duration_ms": 3, "replayed": False,
    },
    "IntentionEmitted": {"intention_tag": "write_file", "intention_data": '{"path": "x"}'},
    "IntentionEvaluated": {"intention_tag": "write_file", "verdict": "approved"},
    "ResponseReady": {"conversation_id": "c1", "content": "done"},
    "WorkflowStarted": {"user_message": "pipeline: main", "node_count": 2},
    "WorkflowNodeStarted": {"node_id": "a", "description": "step a"},
    "WorkflowNodeCompleted": {"node_id": "a", "success": True},
    "WorkflowCompleted": {"success": True},
    "StepSkipped": {"step_id": "b", "reason": "when=false"},
    "OutputResolved": {"chosen_step": "a", "via": {"form": "any_of", "skipped": ["b"]}},
    "MemoryWritten": {"key": "goal", "value": "ship it", "previous_value_seq": None},
    "MemoryDeleted": {"key": "goal", "previous_value_seq": 7},
    "ContextCompacted": {"replaces_seq_range": [2, 9], "summary": "earlier turns", "bytes_saved": -12},
    "ShellSessionStarted": {"stream_id": "s", "pid": 4242, "shell_path": "/bin/bash"},
    "ShellSessionClosed": {"stream_id": "s", "reason": "workflow_end"},
    "PipelineRequested": {"pipeline": "main", "inputs": {"task": "do the thing"}},
    "PipelineCompleted": {"pipeline": "main", "success": True, "final_output": "ok", "error": None},
    "McpServerConnected": {"server": "fs", "tool_count": 3},
    "McpServerDisconnected": {"server": "fs", "reason": "shutdown"},
    "ResumeForked": {"parent_stream_id": "p", "parent_correlation_id": str(uuid.UUID(int=7)), "fork_at_step": "a"},
    "OutboundDispatched": {"sink": "hook", "sink_type": "webhook", "status": 200, "triggered_by": "pipeline_completed"},
    "OutboundFailed": {"sink": "hook", "sink_type": "webhook", "reason": "timeout", "triggered_by": "x"},
}  # fmt: skip

T0 = 1_790_000_000_123_456_789  # ns; the completion lands 1234.5 ms later


def sample_events(run: str, corr: str) -> list[Event]:
    """Every kind once, on a run stream and its step stream, PipelineRequested first."""
    order = ["PipelineRequested", *[k for k in SAMPLES if k not in ("PipelineRequested", "PipelineCompleted")]]
    events = []
    step_kinds = {"LlmCallStarted", "LlmCallCompleted", "LlmCallFailed", "ToolCallRequested", "ToolCallCompleted"}
    for i, name in enumerate(order):
        stream = f"{run}:step:a" if name in step_kinds else run
        kind = parse_kind(name, json.loads(json.dumps(SAMPLES[name])))
        events.append(Event.new(stream, kind, "engine", corr, timestamp_ns=T0 + i * 1000))
    done = parse_kind("PipelineCompleted", SAMPLES["PipelineCompleted"])
    events.append(Event.new(run, done, "engine", corr, timestamp_ns=T0 + 1_234_500_000))
    return events


def test_samples_cover_every_kind_and_dump_byte_for_byte() -> None:
    assert set(SAMPLES) == set(KNOWN_KINDS)
    for name, data in SAMPLES.items():
        kind = parse_kind(name, data)
        assert json.dumps(kind.to_data(), ensure_ascii=False, separators=(",", ":")) == json.dumps(
            data, ensure_ascii=False, separators=(",", ":")
        ), name


def test_finish_reason_is_omitted_when_null() -> None:
    data = dict(SAMPLES["LlmCallCompleted"], finish_reason=None)
    assert "finish_reason" not in parse_kind("LlmCallCompleted", data).to_data()


async def write_samples(db: Path) -> tuple[str, str, list[Event]]:
    run, corr = f"pipeline-main-{uuid.uuid4()}", str(uuid.uuid4())
    events = sample_events(run, corr)
    async with await SqliteWriter.open(db) as writer:
        for ev in events:
            await writer.append(ev)
        await writer.checkpoint()
    return run, corr, events


async def test_round_trip_reads_back_equal(tmp_path: Path) -> None:
    db = tmp_path / ".zymi" / "events.db"
    run, _, events = await write_samples(db)
    async with await SqliteReader.open(db) as reader:
        back = await reader.read_stream(run, include_steps=True)
        assert reader.problems == []
    assert [se.event.stored_as(0) for se in back] == events
    assert [se.data for se in back] == [ev.to_json() for ev in events]
    by_stream: dict[str, list[int]] = {}
    for se in back:
        by_stream.setdefault(se.event.stream_id, []).append(se.event.sequence)
    assert all(seqs == list(range(1, len(seqs) + 1)) for seqs in by_stream.values())
    con = sqlite3.connect(db)
    row = con.execute("SELECT timestamp, kind_tag, correlation_id FROM events WHERE id = 1").fetchone()
    assert row == (format_timestamp(T0, zulu=False), "pipeline_requested", events[0].correlation_id)
    assert row[0] == "2026-09-21T14:13:20.123456789+00:00"  # the column's `+00:00` form, written out


async def test_concurrent_appends_are_serialised(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    async with await SqliteWriter.open(db) as writer:
        kind = parse_kind("WorkflowCompleted", {"success": True})
        await asyncio.gather(*(writer.append(Event.new(f"s{i % 3}", kind, "engine")) for i in range(60)))
    con = sqlite3.connect(db)
    for stream in ("s0", "s1", "s2"):
        seqs = [r[0] for r in con.execute("SELECT sequence FROM events WHERE stream_id = ? ORDER BY id", (stream,))]
        assert seqs == list(range(1, 21))
    heads = dict(con.execute("SELECT stream_id, last_sequence FROM stream_heads").fetchall())
    assert heads == {"s0": 20, "s1": 20, "s2": 20}


def zymi(*args: str) -> subprocess.CompletedProcess[str]:
    bin_ = zymi_bin()
    assert bin_
    return subprocess.run([bin_, *args], capture_output=True, text=True, timeout=LIMIT)


@requires_zymi
async def test_the_real_engine_accepts_our_store(tmp_path: Path) -> None:
    db = tmp_path / ".zymi" / "events.db"
    run, _, events = await write_samples(db)
    # a second run, still going (no PipelineCompleted), to check zymi's pairing of ours
    other = f"pipeline-main-{uuid.uuid4()}"
    async with await SqliteWriter.open(db) as writer:
        req = parse_kind("PipelineRequested", {"pipeline": "main", "inputs": {"task": "x" * 50}})
        await writer.append(Event.new(other, req, "engine", str(uuid.uuid4()), timestamp_ns=T0 + 5_000_000_000))

    verify = zymi("verify", "-d", str(tmp_path))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert f"Verified {len(events) + 1} event(s) across 3 stream(s)." in verify.stdout

    listed = zymi("events", "-d", str(tmp_path), "--raw", "--limit", "1000")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == len(events) + 1
    async with await SqliteReader.open(db) as reader:
        ours = (await reader.read_after(0, 1000)).events
    # zymi re-serialises each event from its own structs: our JSON must be exactly its JSON
    expected = [json.dumps(se.event.raw_envelope(), ensure_ascii=False, separators=(",", ":")) for se in ours]
    assert lines == expected

    runs = zymi("runs", "-d", str(tmp_path), "--raw")
    assert runs.returncode == 0, runs.stderr
    got = [json.loads(line) for line in runs.stdout.splitlines()]
    assert got == [
        {
            "duration_ms": None, "error": None, "fork": None, "pipeline": "main",
            "prompt": "task=" + "x" * 40 + "…", "started_at": format_timestamp(T0 + 5_000_000_000, zulu=False),
            "status": "running", "stream_id": other,
        },
        {
            "duration_ms": 1234, "error": None, "fork": {"fork_at_step": "a", "parent_stream_id": "p"},
            "pipeline": "main", "prompt": "task=do the thing", "started_at": format_timestamp(T0, zulu=False),
            "status": "ok", "stream_id": run,
        },
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["UserMultimodal", "System", "ToolResult", "User"])
def test_message_variants_round_trip(name: str) -> None:
    value = {
        "UserMultimodal": {"parts": [{"Text": "look"}, {"ImageBase64": {"media_type": "image/png", "data": "AAAA"}}]},
        "System": "be brief",
        "ToolResult": {"tool_call_id": "call_1", "content": "42"},
        "User": "",
    }[name]
    data = {"content": {name: value}, "connector": "c"}
    assert parse_kind("UserMessageReceived", data).to_data() == data
