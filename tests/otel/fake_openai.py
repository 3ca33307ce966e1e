"""A fake OpenAI-compatible chat server on loopback that records every request body it receives.

Run as a process: `python -m tests.otel.fake_openai PORT_FILE BODIES_FILE`. It writes the port it bound
to PORT_FILE, then appends each `/v1/chat/completions` request body, one JSON line each, to BODIES_FILE.
Answers are scripted: while the conversation has fewer tool results than the script's tool rounds, it
asks for a tool call; then it answers in text.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOOL_ROUNDS = 3


def reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages")
    assert isinstance(messages, list)
    done = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")
    prompt = sum(len(json.dumps(m)) for m in messages) // 4
    if done < TOOL_ROUNDS:
        n = done + 1
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"path": f"notes/{n}.txt"})},
                }
            ],
        }
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": f"I read {done} files; they all say hello."}
        finish = "stop"
    return {
        "id": f"chatcmpl-{len(messages)}",
        "object": "chat.completion",
        "created": 1,
        "model": str(body.get("model")),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 9, "total_tokens": prompt + 9},
    }


def chunks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer as `stream: true` sends it: the text in two deltas or the tool call in one, then the
    finish reason, then the usage (as `stream_options.include_usage` asks)."""
    choice = answer["choices"][0]
    message = choice["message"]
    base = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    if message.get("content"):
        text = message["content"]
        deltas += [{"content": text[: len(text) // 2]}, {"content": text[len(text) // 2 :]}]
    for i, call in enumerate(message.get("tool_calls") or []):
        deltas.append({"tool_calls": [{"index": i, **call}]})
    out = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    out.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    out.append(base | {"choices": [], "usage": answer["usage"]})
    return out


def main() -> None:
    port_file, bodies_file = Path(sys.argv[1]), Path(sys.argv[2])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            with bodies_file.open("a", encoding="utf-8") as out:
                out.write(json.dumps(body, ensure_ascii=False) + "\n")
            answer = reply(body)
            if body.get("stream"):
                data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks(answer)) + b"data: [DONE]\n\n"
                content_type = "text/event-stream"
            else:
                data, content_type = json.dumps(answer).encode(), "application/json"
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
