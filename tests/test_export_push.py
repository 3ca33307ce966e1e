"""`export --format otel --endpoint`: protobuf batches to an OTLP/HTTP receiver, retried when it says
"later" (503), one line and exit 2 when it refuses; `--follow` pushes the calls written after it
started. The receiver is tests/otlp_sink.py (opentelemetry-proto decodes what it gets); the counts
it must see come from the store (SQL)."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

from tests.conftest import ORACLE, zymi_tui_bin
from tests.otlp_sink import Sink, otlp_sink

NAME = "coding_default"


def _count(db: Path, kind: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return int(con.execute("SELECT count(*) FROM events WHERE kind_tag = ?", (kind,)).fetchone()[0])


def _export(store: Path, url: str, *more: str) -> list[str]:
    return [zymi_tui_bin(), "export", str(store), "--project", str(ORACLE / NAME / "project"), "--format", "otel",
            "--endpoint", url, *more]  # fmt: skip


def _kinds(sink: Sink) -> Counter[str]:
    return Counter(s.name.split()[0] for s in sink.spans)


def test_push_retries_after_503_and_sends_protobuf() -> None:
    store = ORACLE / NAME / "events.db"
    with otlp_sink([503]) as sink:
        proc = subprocess.run(_export(store, sink.url), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [(path, ctype, body is None) for path, ctype, body in sink.requests] == [
        ("/v1/traces", "application/x-protobuf", True),
        ("/v1/traces", "application/x-protobuf", False),
    ]
    kinds = _kinds(sink)
    assert kinds["chat"] == _count(store, "llm_call_started")
    assert kinds["execute_tool"] == _count(store, "tool_call_completed")
    assert f"pushed {len(sink.spans)} spans in 1 requests to {sink.url}/v1/traces" in proc.stderr


def test_a_refusal_is_one_line_and_exit_2() -> None:
    with otlp_sink([400]) as sink:
        proc = subprocess.run(
            _export(ORACLE / NAME / "events.db", sink.url), capture_output=True, text=True, timeout=300
        )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"{sink.url}/v1/traces refused the spans: HTTP 400" in proc.stderr
    assert len(sink.requests) == 1  # a 400 is not retried


def test_follow_pushes_the_calls_written_after_it_started(tmp_path: Path) -> None:
    store = tmp_path / "events.db"
    shutil.copy(ORACLE / NAME / "events.db", store)
    with sqlite3.connect(store) as con:  # the store as it was 40 events in; the rest is written later
        con.execute("CREATE TABLE later AS SELECT * FROM events WHERE id > 40")
        con.execute("DELETE FROM events WHERE id > 40")
    calls_now = _count(store, "llm_call_completed")
    with otlp_sink() as sink:
        proc = subprocess.Popen(_export(store, sink.url, "--follow"), stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while _kinds(sink)["chat"] < calls_now and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _kinds(sink)["chat"] == calls_now
            with sqlite3.connect(store) as con:
                con.execute("INSERT INTO events SELECT * FROM later")
            calls, tools = _count(store, "llm_call_started"), _count(store, "tool_call_completed")
            while (_kinds(sink)["chat"] < calls or _kinds(sink)["invoke_workflow"] < 1) and time.monotonic() < deadline:
                time.sleep(0.2)
            kinds = _kinds(sink)
            assert (kinds["chat"], kinds["execute_tool"], kinds["invoke_workflow"]) == (calls, tools, 1)
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err


def test_a_bad_endpoint_is_one_line_and_the_process_ends() -> None:
    """Refused before the store is read: no reader thread is left holding the process open."""
    proc = subprocess.run(_export(ORACLE / NAME / "events.db", "ftp://127.0.0.1:1"), capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "--endpoint ftp://127.0.0.1:1: give an http:// or https:// URL" in proc.stderr
