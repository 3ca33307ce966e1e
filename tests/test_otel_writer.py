"""`export --format otel` of one long run on two cores (commands/otel_writer.py), seen from the outside:
real processes on the oracle's one-run compaction store (masking, compactions, a project).

- The spans are written by a forked child (an audit hook in the caller sees `os.fork`), byte for byte
  what one process writes, to a file and to stdout, also when the child reads every message it sends
  back from the store (it keeps 1 recent event); the tool results and the messages sent that the
  child read from the store itself are the store's (`json.loads` of its rows).
- The caller writes no span text: the attributes and the answers are written by the child.
- A child that dies mid-export makes one error line and exit status 1, and no "wrote N spans".
- A caller killed (SIGKILL) or interrupted (SIGINT) while its child waits leaves no child behind."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE
from tests.test_pair_start import FORKS_NOTED

ROOT = Path(__file__).parent.parent
STORE = ORACLE / "coding_compaction" / "events.db"
# the CLI in a process of its own, its forks (and spawns of a pair module) noted in a file;
# PROBE_RECENT: the child keeps that many recent events (the others' messages are read back from the
# store); PROBE_DIE: the child ends (status 9) at its second batch of facts; PROBE_STALL: the caller
# notes its child's pid and waits before its first; PROBE_WRITES: the caller notes once each span writer
# it calls once it forked (the OTLP attribute writer, an answer's text made in the writer's module)
PROBE = (
    FORKS_NOTED
    + """
import time
if os.environ.get("PROBE_RECENT"):
    from zymi_tui.telemetry import otel_numbers
    otel_numbers.RECENT_EVENTS = int(os.environ["PROBE_RECENT"])
if os.environ.get("PROBE_DIE"):
    from zymi_tui.telemetry import otel_numbers
    resolve, seen = otel_numbers.NumberedTexts.resolve, []
    def dying(self, definitions, facts):
        seen.append(1)
        if len(seen) == 2:
            os._exit(9)
        return resolve(self, definitions, facts)
    otel_numbers.NumberedTexts.resolve = dying
if os.environ.get("PROBE_STALL"):
    from zymi_tui.commands import otel_writer
    send = otel_writer.SpanWriter._send
    def stalled(self):
        note(f"child {self.proc.pid}")
        time.sleep(120)
        send(self)
    otel_writer.SpanWriter._send = stalled
if os.environ.get("PROBE_WRITES"):
    from zymi_tui.commands import otel_writer
    from zymi_tui.telemetry import otel_rows, otlp_lines
    caller, written, forked = os.getpid(), set(), []
    sys.addaudithook(lambda event, args: forked.append(1) if event == "os.fork" else None)
    def noting(module, name):
        made = getattr(module, name, None)
        if made is None:
            return
        def noted(*args):
            if forked and os.getpid() == caller and name not in written:
                written.add(name)
                note(f"caller {name}")
            return made(*args)
        setattr(module, name, noted)
    noting(otlp_lines, "attribute_parts")
    noting(otel_rows, "attribute_parts")
    noting(otel_writer, "message_json")
from zymi_tui.cli import main
sys.exit(main(sys.argv[2:]))
"""
)
PAIRED = {"ZYMI_TUI_OTEL_PAIR_EVENTS": "1"}
ONE = {"ZYMI_TUI_OTEL_PAIR_EVENTS": "1000000000"}

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir() or not hasattr(os, "fork"), reason="Linux")


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ZYMI_TUI_PAIR_SPAWN" and not k.startswith("PROBE_")}
    return {**env, **extra}


def _probe(marks: Path, env: dict[str, str], *argv: str) -> list[str]:
    return [sys.executable, "-c", PROBE, str(marks), *argv]


def _marks(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _export(tmp: Path, env: dict[str, str], *extra: str) -> tuple[subprocess.CompletedProcess[bytes], list[str]]:
    marks = tmp / f"marks-{len(list(tmp.iterdir()))}"
    cmd = _probe(marks, env, "export", "--format", "otel", str(STORE), *extra)
    proc = subprocess.run(cmd, capture_output=True, env=_env(env), cwd=ROOT, timeout=300)
    return proc, _marks(marks)


@pytest.mark.parametrize("to_file", [True, False])
def test_one_long_run_is_written_by_a_forked_child_as_one_process_writes_it(tmp_path: Path, to_file: bool) -> None:
    outs = []
    for env in (PAIRED, ONE):
        out = tmp_path / f"out-{len(outs)}.jsonl"
        proc, marks = _export(tmp_path, env, *(["-o", str(out)] if to_file else []))
        assert proc.returncode == 0, proc.stderr
        assert marks == (["fork"] if env is PAIRED else []), marks
        outs.append(out.read_bytes() if to_file else proc.stdout)
        if to_file:
            spans = outs[-1].count(b'"spanId"')
            assert proc.stderr.decode().startswith(f"wrote {spans} spans to "), proc.stderr
    assert outs[0] == outs[1]
    assert len(outs[0]) > 100_000


def test_the_caller_writes_no_span_text(tmp_path: Path) -> None:
    """The walk's process is the critical path of one long run: the spans' attributes (the context
    figures among them) and the answers' texts are written by the child, not made in the caller."""
    out = tmp_path / "out.jsonl"
    proc, marks = _export(tmp_path, {**PAIRED, "PROBE_WRITES": "1"}, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert marks == ["fork"], marks
    assert b'"zymi.context.rebuilt_chars"' in out.read_bytes()


def test_messages_read_back_from_the_store_are_those_of_one_process(tmp_path: Path) -> None:
    """A message the child no longer holds the event of is read back from the store, to the same bytes."""
    outs = []
    for env in ({**PAIRED, "PROBE_RECENT": "1"}, ONE):
        out = tmp_path / f"out-{len(outs)}.jsonl"
        proc, marks = _export(tmp_path, env, "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert marks == (["fork"] if env is not ONE else [])
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])}


def test_what_the_child_reads_from_the_store_is_the_stores(tmp_path: Path) -> None:
    """The child reads the events itself: the tool results on the tool spans, and each tool result sent
    in full among a call's input messages, are the store's (a masked one is a shorter placeholder)."""
    out = tmp_path / "out.jsonl"
    proc, marks = _export(tmp_path, PAIRED, "-o", str(out))
    assert proc.returncode == 0 and marks == ["fork"], proc.stderr
    db = sqlite3.connect(STORE)
    results, calls = {}, 0
    for kind_tag, data in db.execute("SELECT kind_tag, data FROM events ORDER BY id"):
        kind = json.loads(data)["kind"]["data"]
        if kind_tag == "tool_call_completed":
            results[kind["call_id"]] = kind["result"]
        calls += kind_tag == "llm_call_started"
    spans = [s for line in out.read_text().splitlines() for rs in json.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for s in ss["spans"]]  # fmt: skip
    tools = {(a := _attrs(s))["gen_ai.tool.call.id"]: a["gen_ai.tool.call.result"] for s in spans
             if s["name"].startswith("execute_tool")}  # fmt: skip
    assert tools == results
    chats = [_attrs(s) for s in spans if s["name"].startswith("chat ")]
    assert len(chats) == calls
    full = masked = 0
    for a in chats:
        for m in json.loads(a.get("gen_ai.input.messages", "[]")):
            for p in m["parts"]:
                if p["type"] == "tool_call_response":
                    if p["response"] == results[p["id"]]:
                        full += 1
                    else:
                        assert len(p["response"]) < len(results[p["id"]]), p
                        masked += 1
    assert full > 0, (full, masked)


def test_a_child_that_dies_fails_the_export_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    proc, marks = _export(tmp_path, {**PAIRED, "PROBE_DIE": "1"}, "-o", str(out))
    assert marks == ["fork"]
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert lines == [
        "zymi-tui: error: the process writing the spans ended early (status 9); what was written is incomplete"
    ], lines
    assert b"wrote" not in proc.stderr and proc.stdout == b""


def _ended(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_caller_that_is_killed_leaves_no_child(tmp_path: Path, sig: signal.Signals) -> None:
    marks = tmp_path / "marks"
    env = {**PAIRED, "PROBE_STALL": "1"}
    cmd = _probe(marks, env, "export", "--format", "otel", str(STORE), "-o", str(tmp_path / "out.jsonl"))
    caller = subprocess.Popen(cmd, env=_env(env), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not any(m.startswith("child ") for m in _marks(marks)):
            assert time.monotonic() < deadline and caller.poll() is None, _marks(marks)
            time.sleep(0.05)
        child = int(next(m for m in _marks(marks) if m.startswith("child ")).split()[1])
        assert not _ended(child)
        caller.send_signal(sig)
        caller.wait(timeout=60)
        deadline = time.monotonic() + 10
        while not _ended(child):
            assert time.monotonic() < deadline, f"child {child} still running after its caller's end"
            time.sleep(0.05)
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
