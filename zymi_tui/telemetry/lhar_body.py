"""What an LHAR entry takes from its call's request body, but for the messages: the same for every
call of a step (its model, sampling, tools), so its text is made once per step kind (`body_text`), and
each entry's body is that text with the messages' JSON (made once per message) joined in."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from zymi_tui.context.tokens import estimate_text_tokens
from zymi_tui.events.json_text import json_text
from zymi_tui.telemetry.lhar_text import value_text
from zymi_tui.telemetry.otel_content import tool_definitions

# a call's request body with an empty `messages` list, for (pipeline, step, compaction): all a body
# depends on but its messages (engine/bodies.py); None when no body is known (no project)
BodyFrames = Callable[[str | None, str | None, bool], dict[str, Any] | None]


@dataclass(frozen=True)
class BodyText:
    """The JSON texts an entry takes from its body (`body_text`)."""

    request: str  # gen_ai.request
    http: str  # http (its `stream` from the body)
    tools_tokens: int  # the tool definitions' estimated tokens
    tools_count: int
    definitions: str  # context_lens.tool_definitions
    head: bytes | None  # the body's JSON, UTF-8, up to its first message (None: no body)
    tail: bytes = b""  # the body's JSON after its last message

    def with_messages(self, messages: Sequence[bytes]) -> bytes:
        """The body's JSON text holding `messages` (each one's JSON): as the whole body encodes."""
        assert self.head is not None
        return b"".join((self.head, b", ".join(messages), self.tail))


def _definitions(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """context-lens's `tool_definitions`: each tool's name and description."""
    return [
        {"name": str(d["name"]), "description": d["description"] if isinstance(d["description"], str) else None}
        for d in tool_definitions(tools)
    ]


def _split(body: dict[str, Any]) -> tuple[bytes, bytes]:
    """The body's JSON before and after the items of its `messages` list: encoded with a mark in the
    list's place, a string its text cannot hold elsewhere (tried again in the unlikely case it does)."""
    while True:
        mark = f"lhar-messages-{uuid.uuid4().hex}"
        parts = json_text(body | {"messages": mark}).split(value_text(mark))
        if len(parts) == 2:
            return (parts[0] + "[").encode(), ("]" + parts[1]).encode()


def body_text(body: dict[str, Any] | None, model: str) -> BodyText:
    """The texts an entry takes from `body` (with no messages; None: no body), `model` when it names none."""
    given = body or {}
    tools = given.get("tools") or []
    request: dict[str, Any] = {
        "model": str(given.get("model") or model),
        "max_tokens": given.get("max_tokens"),
        "temperature": given.get("temperature"),
        "top_p": None,
        "stop_sequences": [],
    }
    http: dict[str, Any] = {
        "method": "POST",
        "url": None,
        "status_code": None,
        "api_format": "openai-chat",
        "stream": bool(given.get("stream", False)),
        "request_headers": {},
        "response_headers": {},
    }
    head, tail = _split(body) if body is not None else (None, b"")
    return BodyText(
        json_text(request),
        json_text(http),
        estimate_text_tokens(json_text(list(tools))) if tools else 0,
        len(tools),
        json_text(_definitions(tools)),
        head,
        tail,
    )
