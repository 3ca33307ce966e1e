"""The oracle harness never talks to another process's port: the fake model binds port 0 itself and
reports it, and a connector port counts only when the engine's own process listens on it."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import HARNESS


def _harness() -> Any:
    spec = importlib.util.spec_from_file_location("make_stores_ports", HARNESS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fake_model_reports_the_port_it_bound_and_owns_it(tmp_path: Path) -> None:
    harness = _harness()
    with open(tmp_path / "out", "w") as out:
        proc, port = harness.start_fake_llm(str(tmp_path), str(tmp_path / "requests.jsonl"), out)
        try:
            assert harness.listens(proc.pid, port)
            with socket.create_connection(("127.0.0.1", port)):
                pass
        finally:
            harness.stop(proc, "fake_llm", [])
    assert (tmp_path / "fake_llm.port").read_text() == str(port)


def test_a_port_held_by_another_process_is_not_taken_for_the_engines() -> None:
    harness = _harness()
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen()
    port = other.getsockname()[1]
    # a process that listens nowhere: the port is busy, but not because of it
    engine = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert harness.listens(engine.pid, port) is False
        assert harness.wait_port(port, 5)  # what the harness used to accept: anyone listening
        engine.stdin.close()  # type: ignore[union-attr]
        engine.wait()
        # it exits without ever listening: the harness says so at once (a clash, tried again on other ports)
        assert harness.wait_own_port(engine, port, 300) is False
    finally:
        other.close()
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    mine = socket.socket()
    mine.bind(("127.0.0.1", 0))
    mine.listen()
    try:
        assert harness.listens(os.getpid(), mine.getsockname()[1])
    finally:
        mine.close()
