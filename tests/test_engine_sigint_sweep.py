"""Ctrl-C at 30+ points of a `run`, and during `resume` and `serve`: the documented exit code, no
traceback, the run sealed (`PipelineCompleted` written), and both verifiers pass.

Each trial starts the CLI as a subprocess on a scripted OpenAI-compatible model (loopback), waits
for the k-th row of its store to appear (event-driven: no fixed sleeps), sends SIGINT and checks the
store afterwards. The trials run four at a time.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import zymi_bin, zymi_tui_bin
from tests.waiting import LIMIT, announced_port
from zymi_tui.cli import main

TOOL_CALLS = 4  # per agent step: each call is 6 events, so a two-step run writes about 70
INTERRUPTED = "interrupted (Ctrl-C)"
PARALLEL = 4


@pytest.fixture(scope="module")
def llm_port() -> Iterator[int]:
    """A model that answers each step with TOOL_CALLS `echo` calls, then a final answer (10 ms a reply)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            try:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            except ValueError:
                return  # the engine was interrupted while sending
            done = sum(1 for m in body["messages"] if m.get("role") == "tool")
            time.sleep(0.01)
            if done < TOOL_CALLS:
                call = {"name": "execute_shell_command", "arguments": json.dumps({"command": f"echo {done}"})}
                tool_call = {"id": f"c{done}", "type": "function", "function": call}
                msg: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
                finish = "tool_calls"
            else:
                msg, finish = {"role": "assistant", "content": "done"}, "stop"
            data = json.dumps({"model": "m", "choices": [{"message": msg, "finish_reason": finish}], "usage": {}})
            try:
                self.send_response(200)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())
            except OSError:
                pass  # the engine was interrupted while waiting for this answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def _project(root: Path, llm: int, *, inbox: bool = False) -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "pipelines").mkdir()
    connector = (
        "connectors:\n  - type: http_inbound\n    name: inbox\n    host: 127.0.0.1\n    port: 0\n"
        "    path: /msg\n    pipeline: p\n    pipeline_input: task\n"
        '    extract: {stream_id: "$.s", content: "$.t"}\n'
        if inbox
        else ""
    )
    (root / "project.yml").write_text(
        f"name: t\nllm:\n  provider: openai\n  model: mock\n  base_url: http://127.0.0.1:{llm}/v1\n"
        'policy:\n  enabled: true\n  allow: ["echo *"]\n' + connector,
        encoding="utf-8",
    )
    (root / "agents" / "bot.yml").write_text(
        "name: bot\ntools: [execute_shell_command]\nmax_iterations: 10\n", encoding="utf-8"
    )
    (root / "pipelines" / "p.yml").write_text(
        "name: p\ninputs: [{name: task}]\nsteps:\n"
        "  - {id: a, agent: bot, task: 'first ${inputs.task}'}\n"
        "  - {id: b, agent: bot, task: 'then ${steps.a.output}', depends_on: [a]}\n",
        encoding="utf-8",
    )
    return root


def _rows(db: Path) -> list[tuple[str, str, str]]:
    """(stream_id, kind_tag, data) in global order; [] while the store does not exist yet."""
    if not db.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return list(con.execute("SELECT stream_id, kind_tag, data FROM events ORDER BY id"))
        finally:
            con.close()
    except sqlite3.Error:
        return []


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(con.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@dataclass
class Trial:
    label: str
    returncode: int
    stdout: str
    stderr: str
    root: Path


def _post(port: int) -> None:
    """POST one message to the inbox (listening: serve said so)."""
    body = json.dumps({"s": "chat-1", "t": "go"}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/msg", data=body, method="POST")
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=LIMIT) as resp:
        assert resp.status == 200


def _interrupt(
    label: str,
    root: Path,
    argv: list[str],
    *,
    ready: str,
    rows: int,
    pause: float,
    post: bool = False,
    count: Callable[[], int] | None = None,
) -> Trial:
    """Start `argv` in `root`; once stdout shows `ready` (its SIGINT handler is installed), optionally
    POST a message to the inbox once serve says which port it listens on (`post`), wait until the store
    holds `rows` rows (`count`: how many it holds; default: the project's SQLite store), wait `pause`
    more seconds, then send SIGINT."""
    db = root / ".zymi" / "events.db"
    rows_now = count or (lambda: _count(db))
    proc = subprocess.Popen(
        argv, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    seen = ""
    while ready not in seen:
        line = proc.stdout.readline()
        assert line, f"{label}: exited before `{ready}`: {proc.communicate()}"
        seen += line
    if post:
        port, more = announced_port(proc.stdout, "http_inbound 'inbox': listening on")
        seen += more
        _post(port)
    deadline = time.monotonic() + LIMIT
    while rows_now() < rows and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    if pause:
        time.sleep(pause)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=LIMIT)
    return Trial(label, proc.returncode, seen + out, err, root)


def _zymi_verifies(root: Path) -> None:
    real = zymi_bin()
    if real is not None:
        check = subprocess.run([real, "--no-venv", "verify", "-d", str(root)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def _sealed(trial: Trial, stream: str, rows: list[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    """The run's one `PipelineCompleted`, after which only its shell's closing may follow (`rows`:
    the store's rows; default: the project's SQLite store)."""
    every = _rows(trial.root / ".zymi" / "events.db") if rows is None else rows
    kinds = [(k, d) for s, k, d in every if s == stream]
    done = [n for n, (k, _) in enumerate(kinds) if k == "pipeline_completed"]
    assert len(done) == 1, f"{trial.label}: {len(done)} PipelineCompleted in {[k for k, _ in kinds]}"
    assert [k for k, _ in kinds[done[0] + 1 :]] in ([], ["shell_session_closed"]), trial.label
    data: dict[str, Any] = json.loads(kinds[done[0]][1])["kind"]["data"]
    return data


def _check_run_like(
    trial: Trial, stream: str, store: Path | str, rows: list[tuple[str, str, str]] | None = None
) -> bool:
    """`run` and `resume`: exit 130 with one line when interrupted; True if the run was cut short."""
    assert "Traceback" not in trial.stderr, f"{trial.label}: {trial.stderr}"
    done = _sealed(trial, stream, rows)
    kept = f"its events are kept in {store}"
    if done["error"] == INTERRUPTED:
        assert done["success"] is False
        assert trial.returncode == 130, f"{trial.label}: {trial.returncode} {trial.stderr}"
        assert trial.stderr.splitlines() == [f"{INTERRUPTED}: the run is sealed as failed; {kept}"], trial.label
        return True
    # the signal came as the run ended: it finished on its own (-2: during the interpreter's exit,
    # where Python has put back the default SIGINT action; a shell shows that as 130 too)
    assert done["success"] is True, f"{trial.label}: {done}"
    assert (trial.returncode, trial.stderr.splitlines()) in (
        (0, []),
        (-signal.SIGINT, []),
        (130, [f"{INTERRUPTED} after the run ended; {kept}"]),
    ), f"{trial.label}: {trial.returncode} {trial.stderr}"
    return False


def _run_streams(root: Path) -> list[str]:
    """Run streams in order of their first row."""
    return list(dict.fromkeys(s for s, _, _ in _rows(root / ".zymi" / "events.db") if ":step:" not in s))


def _complete_run(tmp_path: Path, llm: int) -> tuple[Path, int]:
    """One finished run: its project and how many rows it wrote."""
    root = _project(tmp_path / "whole", llm)
    done = subprocess.run(
        [zymi_tui_bin(), "run", "p", "-i", "task=go"], cwd=root, capture_output=True, text=True, timeout=LIMIT
    )
    assert done.returncode == 0, done.stderr
    return root, _count(root / ".zymi" / "events.db")


def test_sigint_anywhere_in_run_resume_and_serve_leaves_every_run_sealed(
    llm_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, total = _complete_run(tmp_path, llm_port)
    assert total >= 60
    parent = _run_streams(whole)[0]
    run_at = [round(n * (total - 4) / 29) for n in range(30)]  # from before the first row to the end
    pauses = (0.0, 0.002, 0.007)
    jobs: list[tuple[str, Any]] = []
    for n, k in enumerate(run_at):
        root = _project(tmp_path / f"run{n}", llm_port)
        argv = [zymi_tui_bin(), "run", "p", "-i", "task=go"]
        jobs.append(("run", (f"run@{k}", root, argv, {"ready": "Pipeline: p", "rows": k, "pause": pauses[n % 3]})))
    forked = tmp_path / "forked"
    shutil.copytree(whole, forked)
    done = subprocess.run(
        [zymi_tui_bin(), "resume", parent, "--from-step", "b"],
        cwd=forked, capture_output=True, text=True, timeout=LIMIT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fork_rows = _count(forked / ".zymi" / "events.db") - total
    # the fork's head is one transaction (step a's copies); step b re-runs after it
    for n, k in enumerate(range(0, fork_rows - 3, max(1, fork_rows // 6))):
        root = tmp_path / f"resume{n}"
        shutil.copytree(whole, root)
        argv = [zymi_tui_bin(), "resume", parent, "--from-step", "b"]
        spec = {"ready": "Resume plan", "rows": total + k, "pause": pauses[n % 3]}
        jobs.append(("resume", (f"resume@{k}", root, argv, spec)))
    for n, k in enumerate(range(3, total - 4, 14)):
        root = _project(tmp_path / f"serve{n}", llm_port, inbox=True)
        argv = [zymi_tui_bin(), "serve", "p"]
        spec = {"ready": "press Ctrl+C to stop", "rows": k, "pause": pauses[n % 3], "post": True}
        jobs.append(("serve", (f"serve@{k}", root, argv, spec)))

    def trial(job: tuple[str, Any]) -> tuple[str, bool]:
        kind, (label, root, argv, spec) = job
        return kind, _check(kind, _interrupt(label, root, argv, **spec), parent)

    with ThreadPoolExecutor(PARALLEL) as pool:
        outcomes = list(pool.map(trial, jobs))
    for _, (label, root, _, _) in jobs:  # `zymi-tui verify`, in this process (it starts no faster)
        if not _count(root / ".zymi" / "events.db"):
            continue  # interrupted before the first row
        capsys.readouterr()
        assert main(["verify", str(root)]) == 0, f"{label}: {capsys.readouterr()}"
    cut_short = {kind: sum(cut for k, cut in outcomes if k == kind) for kind in ("run", "resume", "serve")}
    # the points really fall inside the runs, not after them
    assert cut_short["run"] >= 26 and cut_short["resume"] >= 4 and cut_short["serve"] >= 4, cut_short


def _check(kind: str, trial: Trial, parent: str) -> bool:
    """Every check on one trial (the verifiers included); True if the run was cut short."""
    store = trial.root / ".zymi" / "events.db"
    streams = _run_streams(trial.root)
    if streams in ([], [parent]):  # before the run's first row: nothing to seal
        assert kind != "serve" and trial.returncode == 130, trial
        assert trial.stderr.splitlines() in ([INTERRUPTED], [f"{INTERRUPTED} before the run started"]), trial
        return True
    if kind == "run":
        assert len(streams) == 1
        cut = _check_run_like(trial, streams[0], store)
    elif kind == "resume":
        forks = [s for s in streams if s != parent]
        assert len(forks) == 1, f"{trial.label}: {streams} {trial.stderr}"
        cut = _check_run_like(trial, forks[0], store)
    else:
        assert trial.returncode == 0 and "Traceback" not in trial.stderr, f"{trial.label}: {trial.stderr}"
        assert "shutting down…" in trial.stdout
        cut = _sealed(trial, "chat-1")["error"] == INTERRUPTED
    _zymi_verifies(trial.root)
    return cut
