"""The shell tool's output, from the outside (`zymi-tui run` as a subprocess, a scripted model on loopback):
a line longer than a stream buffer (64 KiB) and thousands of short lines come back whole, bytes that are
not UTF-8 come back replaced, and the next command of the same shell session gets only its own output."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.test_engine_http import Model, model, project, run

__all__ = ["model"]  # the fixture, used by name below

COMMANDS = [
    "head -c 100000 /dev/zero | tr '\\0' a; echo; echo after-the-long-line",
    "seq 1 3000",
    "printf 'x\\xe2\\x82\\ny\\n'",
    "echo short; echo warned >&2",
]


def scripted(n: int, _: bytes) -> tuple[list[str], bytes, bool]:
    msg: dict[str, Any] = {"role": "assistant", "content": "final words ✓"}
    finish = "stop"
    if n <= len(COMMANDS):
        args = json.dumps({"command": COMMANDS[n - 1]})
        call = {"id": f"c{n}", "type": "function", "function": {"name": "execute_shell_command", "arguments": args}}
        msg, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    body = json.dumps({"model": "m", "choices": [{"message": msg, "finish_reason": finish}], "usage": {}}).encode()
    return ["HTTP/1.1 200 OK", f"Content-Length: {len(body)}"], body, False


def test_long_lines_many_lines_and_bad_bytes(tmp_path: Path, model: Callable[..., tuple[Model, int]]) -> None:
    server, port = model(scripted)
    root = project(tmp_path, f"http://127.0.0.1:{port}/v1")
    (root / "project.yml").write_text(
        (root / "project.yml").read_text(encoding="utf-8").replace('["echo *"]', '["*"]'), encoding="utf-8"
    )
    proc = run(root)
    assert proc.returncode == 0, proc.stderr
    con = sqlite3.connect(f"file:{root / '.zymi' / 'events.db'}?mode=ro", uri=True)
    rows = con.execute("SELECT data FROM events WHERE kind_tag = 'tool_call_completed' ORDER BY id").fetchall()
    con.close()
    results = [json.loads(d)["kind"]["data"] for (d,) in rows]
    assert [r["is_error"] for r in results] == [False] * 4
    long_line, many, bad, short = (r["result"] for r in results)
    assert long_line == "a" * 100000 + "\nafter-the-long-line"
    assert many == "\n".join(str(i) for i in range(1, 3001))
    assert bad == "x\ufffd\ny"
    assert short == "short"
    assert len(server.seen) == 5
