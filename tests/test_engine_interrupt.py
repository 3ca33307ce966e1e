"""Ctrl-C in the middle of a run: one clear message, the events written so far kept, chains that verify."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.test_engine_failures import BIN, REAL_ZYMI, _project
from tests.waiting import LIMIT, wait_until


@pytest.fixture
def slow_llm() -> Iterator[int]:
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            release.wait(LIMIT)  # answers only once the test is over: the run is interrupted mid-call
            data = json.dumps({"model": "m", "choices": [{"message": {"content": "late"}, "finish_reason": "stop"}]})
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    release.set()
    server.shutdown()


def _kinds(db: Path) -> list[str]:
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("SELECT kind_tag FROM events ORDER BY id")]
    except sqlite3.Error:
        return []
    finally:
        con.close()


def test_ctrl_c_mid_run_keeps_events_and_seals_the_run(slow_llm: int, tmp_path: Path) -> None:
    root = _project(tmp_path, slow_llm)
    db = root / ".zymi" / "events.db"
    proc = subprocess.Popen(
        [str(BIN), "run", "p", "-i", "task=go", "-d", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until(lambda: "llm_call_started" in _kinds(db) or proc.poll() is not None, "the run's first LLM call")
    assert "llm_call_started" in _kinds(db), proc.communicate()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=LIMIT)
    assert proc.returncode == 130
    assert err.strip().splitlines() == [
        f"interrupted (Ctrl-C): the run is sealed as failed; its events are kept in {db}"
    ]
    assert "Traceback" not in err
    kinds = _kinds(db)
    assert kinds[:4] == ["pipeline_requested", "workflow_started", "workflow_node_started", "llm_call_started"]
    assert kinds[-1] == "pipeline_completed"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    done = json.loads(con.execute("SELECT data FROM events WHERE kind_tag='pipeline_completed'").fetchone()[0])
    con.close()
    assert done["kind"]["data"]["success"] is False and "interrupted" in done["kind"]["data"]["error"]
    if REAL_ZYMI.exists():
        check = subprocess.run([str(REAL_ZYMI), "--no-venv", "verify", "-d", str(root)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
