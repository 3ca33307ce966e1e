"""The engine's failure paths and bad input, checked against the strings and events of docs/engine.md#agent-step.

The model is a scripted OpenAI-compatible server on loopback; the engine runs as `zymi-tui run` in a
subprocess with stdin closed (so an approval prompt sees EOF, as in zymi's recorded probe).
"""

from __future__ import annotations

import io
import json
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from zymi_tui.cli import main

BIN = Path(sys.executable).parent / "zymi-tui"
REAL_ZYMI = Path(sys.executable).parent / "zymi"


class Script:
    def __init__(self) -> None:
        self.replies: list[tuple[int, Any]] = []
        self.bodies: list[dict[str, Any]] = []


@pytest.fixture
def llm() -> Iterator[tuple[Script, int]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            script.bodies.append(body)
            status, payload = script.replies.pop(0) if script.replies else (200, _answer("done"))
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield script, server.server_address[1]
    server.shutdown()


def _answer(content: str | None, calls: list[tuple[str, str, dict[str, Any]]] = (), finish: str = "stop") -> Any:  # type: ignore[assignment]
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls
        ]
        finish = "tool_calls" if finish == "stop" else finish
    return {"model": "m", "choices": [{"message": msg, "finish_reason": finish}], "usage": {}}


def _project(
    root: Path, port: int, *, max_iterations: int = 10, extra: str = "", tools: str = "read_file, execute_shell_command"
) -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "pipelines").mkdir()
    (root / "project.yml").write_text(
        f"name: t\nllm:\n  provider: openai\n  model: mock\n  base_url: http://127.0.0.1:{port}/v1\n"
        'policy:\n  enabled: true\n  allow: ["echo *"]\n  deny: ["rm -rf *"]\n' + extra,
        encoding="utf-8",
    )
    (root / "agents" / "bot.yml").write_text(
        f"name: bot\ntools: [{tools}]\nmax_iterations: {max_iterations}\n", encoding="utf-8"
    )
    (root / "pipelines" / "p.yml").write_text(
        "name: p\ninputs: [{name: task}]\nsteps:\n  - id: l\n    agent: bot\n    task: '${inputs.task}'\n",
        encoding="utf-8",
    )
    (root / ".env").write_text("SECRET=1\n", encoding="utf-8")
    return root


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """`zymi-tui run p -i task=go -d ROOT`, in-process, with stdin at EOF (an approval sees no answer)."""

    def go(root: Path, stdin: str = "") -> Result:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = main(["run", "p", "-i", "task=go", "-d", str(root)])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return go


def _events(root: Path) -> list[tuple[str, str, dict[str, Any]]]:
    con = sqlite3.connect(f"file:{root / '.zymi' / 'events.db'}?mode=ro", uri=True)
    rows = con.execute("SELECT stream_id, kind_tag, data FROM events ORDER BY id").fetchall()
    con.close()
    return [(s, k, json.loads(d)["kind"]["data"]) for s, k, d in rows]


def _verify(root: Path) -> None:
    if REAL_ZYMI.exists():
        proc = subprocess.run([str(REAL_ZYMI), "--no-venv", "verify", "-d", str(root)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_provider_500_is_llm_call_failed_and_seals_the_run(
    llm: tuple[Script, int], tmp_path: Path, run: Callable[..., Result]
) -> None:
    script, port = llm
    script.replies.append((500, "upstream exploded"))
    root = _project(tmp_path, port)
    proc = run(root)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: [l] LLM call failed: API error (status 500): upstream exploded"
    ev = _events(root)
    kinds = [k for _, k, _ in ev]
    assert kinds[kinds.index("llm_call_started") :] == [
        "llm_call_started", "llm_call_failed", "workflow_node_completed", "workflow_completed", "pipeline_completed",
    ]  # fmt: skip
    failed = next(d for _, k, d in ev if k == "llm_call_failed")
    assert failed["iteration"] == 1 and failed["error"] == "API error (status 500): upstream exploded"
    done = next(d for _, k, d in ev if k == "pipeline_completed")
    assert done == {
        "pipeline": "p",
        "success": False,
        "final_output": None,
        "error": "[l] LLM call failed: API error (status 500): upstream exploded",
    }
    assert next(d for _, k, d in ev if k == "workflow_node_completed") == {"node_id": "l", "success": False}
    assert len(script.bodies) == 1  # no retries
    _verify(root)


def test_connection_refused_is_one_line(tmp_path: Path, run: Callable[..., Result]) -> None:
    with socket.socket() as s:  # bound, never listening: a connection is refused, and no one else gets the port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        root = _project(tmp_path, port)
        proc = run(root)
    assert proc.returncode == 1
    assert proc.stderr == (  # zymi's words (its recorded probe)
        f"error: [l] LLM call failed: HTTP request failed: error sending request for url "
        f"(http://127.0.0.1:{port}/v1/chat/completions): client error (Connect): tcp connect error: "
        "Connection refused (os error 111)\n"
    )
    assert "llm_call_failed" in [k for _, k, _ in _events(root)]
    _verify(root)


def test_finish_reason_length_fails_the_step(
    llm: tuple[Script, int], tmp_path: Path, run: Callable[..., Result]
) -> None:
    script, port = llm
    script.replies.append((200, _answer("cut off", finish="length")))
    root = _project(tmp_path, port)
    proc = run(root)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "error: [l] the model's answer hit max_tokens (4096) and is cut off (finish_reason=length; reasoning "
        "tokens count toward it). Raise `max_tokens` in agents/bot.yml or `defaults.max_tokens` in project.yml"
    )
    completed = next(d for _, k, d in _events(root) if k == "llm_call_completed")
    assert completed["finish_reason"] == "length"


def test_max_iterations_writes_no_node_completed(
    llm: tuple[Script, int], tmp_path: Path, run: Callable[..., Result]
) -> None:
    script, port = llm
    for n in range(2):
        script.replies.append((200, _answer(None, [(f"c{n}", "execute_shell_command", {"command": "echo hi"})])))
    root = _project(tmp_path, port, max_iterations=2)
    proc = run(root)
    assert proc.returncode == 1
    assert "error: pipeline had failing steps" in proc.stderr
    ev = _events(root)
    kinds = [k for _, k, _ in ev]
    assert kinds.count("llm_call_started") == 2 and "workflow_node_completed" not in kinds
    done = next(d for _, k, d in ev if k == "pipeline_completed")
    assert done["final_output"] == "[max iterations (2) reached without final answer]"
    assert done["success"] is False and done["error"] is None
    assert "response_ready" not in kinds
    results = [d["result"] for _, k, d in ev if k == "tool_call_completed"]
    assert results == ["hi", "hi"]


def test_denied_and_unanswered_tools(llm: tuple[Script, int], tmp_path: Path, run: Callable[..., Result]) -> None:
    script, port = llm
    calls = [
        ("a", "execute_shell_command", {"command": "rm -rf junk"}),
        ("b", "read_file", {"path": ".env"}),
        ("c", "execute_shell_command", {"command": "echo hi && pwd"}),
        ("d", "no_such_tool", {}),
    ]
    script.replies.append((200, _answer("Let me try.", calls)))
    root = _project(tmp_path, port)
    proc = run(root)
    assert proc.returncode == 0
    ev = _events(root)
    results = [(d["result"], d["is_error"]) for _, k, d in ev if k == "tool_call_completed"]
    assert results == [
        ("[denied by policy] Command matches deny rule: rm -rf *", True),
        ("[denied by policy] File read denied (^.*\\.env$): .env", True),
        ("[rejected by human]", True),
        ("[tool error] unknown built-in tool: no_such_tool", True),
    ]
    denied = next(d for _, k, d in ev if k == "approval_denied")
    assert denied["reason"] == "no_input_channel" and denied["decided_by"] == "terminal:terminal"
    verdicts = [d["verdict"] for _, k, d in ev if k == "intention_evaluated"]
    assert verdicts[2] == "requires_approval: Shell command requires approval: echo hi && pwd"
    assert not (root / "junk").exists()
    second = script.bodies[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool", "tool", "tool"]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, "no project.yml found in"),
        ({"project.yml": "name: [unclosed\n"}, "invalid YAML in"),
        (
            {
                "project.yml": "name: t\n",
                "pipelines/p.yml": "name: p\nsteps:\n  - id: s\n    agent: ghost\n    task: x\n",
            },
            "validation error in pipelines/p.yml: step `s` references unknown agent `ghost`",
        ),
        (
            {"project.yml": "name: t\n", "agents/a.yml": "name: a\ntools: [teleport]\n"},
            "validation error in agents/a.yml: agent `a` references unknown tool `teleport`",
        ),
        (
            {
                "project.yml": "name: t\nllm: {provider: anthropic, model: claude}\n",
                "agents/a.yml": "name: a\n",
                "pipelines/p.yml": "name: p\nsteps:\n  - id: s\n    agent: a\n    task: x\n",
            },
            "Anthropic provider requires an api_key",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path, files: dict[str, str], expected: str, run: Callable[..., Result]
) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    proc = run(tmp_path)
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr


def test_yaml_syntax_error_names_the_line(tmp_path: Path, run: Callable[..., Result]) -> None:
    (tmp_path / "project.yml").write_text("name: t\nllm:\n  provider: [openai\n", encoding="utf-8")
    proc = run(tmp_path)
    assert proc.returncode == 2 and "line " in proc.stderr and str(tmp_path / "project.yml") in proc.stderr


def test_a_human_approval_lets_the_command_run(
    llm: tuple[Script, int], tmp_path: Path, run: Callable[..., Result]
) -> None:
    script, port = llm
    script.replies.append((200, _answer(None, [("a", "execute_shell_command", {"command": "echo hi && pwd"})])))
    root = _project(tmp_path, port)
    proc = run(root, stdin="yes\n")
    assert proc.returncode == 0
    assert "--- approval required ----------------------------\n  Shell command requires approval: echo hi && pwd" in (
        proc.stdout
    )
    ev = _events(root)
    granted = next(d for _, k, d in ev if k == "approval_granted")
    assert granted["decided_by"] == "terminal:terminal" and granted["reason"] is None
    result = next(d for _, k, d in ev if k == "tool_call_completed")
    assert result["result"] == f"hi\n{root}" and result["is_error"] is False
