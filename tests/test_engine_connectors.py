"""The http_inbound connector (docs/engine.md#connectors): what it publishes, and its refusals."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from zymi_tui.engine.connectors import HttpInboundConnector, json_path
from zymi_tui.engine.recorder import Recorder
from zymi_tui.events.sqlite_write import SqliteWriter


async def _serve(tmp_path: Path, cfg: dict[str, Any]) -> tuple[HttpInboundConnector, Recorder, list[Any]]:
    writer = await SqliteWriter.open(tmp_path / "events.db")
    recorder = Recorder(writer)
    seen: list[Any] = []
    recorder.listeners.append(seen.append)
    conn = HttpInboundConnector(cfg, recorder)
    await conn.start()
    return conn, recorder, seen


BASE = {"type": "http_inbound", "name": "inbox", "path": "/msg", "pipeline": "chat",
        "extract": {"stream_id": "$.chat.id", "content": "$.text"}}  # fmt: skip


async def test_a_post_publishes_the_message_and_the_request_on_the_extracted_stream(tmp_path: Path) -> None:
    conn, recorder, seen = await _serve(tmp_path, {**BASE, "port": 0})
    port = conn.port  # the one the OS gave it
    try:
        async with httpx.AsyncClient(trust_env=False) as client:
            ok = await client.post(f"http://127.0.0.1:{port}/msg", json={"chat": {"id": 42}, "text": "hi"})
            missing = await client.post(f"http://127.0.0.1:{port}/msg", json={"chat": {}, "text": "hi"})
            wrong = await client.post(f"http://127.0.0.1:{port}/other", json={})
    finally:
        await conn.stop()
        await recorder.writer.close()
    assert ok.status_code == 200 and wrong.status_code == 404
    assert missing.status_code == 400 and missing.json()["error"] == "extract_failed"
    assert [(e.event.stream_id, e.event.tag, e.event.source) for e in seen] == [
        ("42", "user_message_received", "inbox"),
        ("42", "pipeline_requested", "inbox"),
    ]
    assert seen[1].event.kind.inputs == {"message": "hi"}
    assert seen[0].event.correlation_id == seen[1].event.correlation_id


@pytest.mark.parametrize("auth", ["bearer", "hmac"])
async def test_auth_refuses_a_bad_request(tmp_path: Path, auth: str) -> None:
    cfg: dict[str, Any] = {**BASE, "port": 0}
    cfg["auth"] = (
        {"type": "bearer", "token": "t0k"}
        if auth == "bearer"
        else {"type": "hmac", "header": "X-Sig", "secret": "s", "prefix": "sha256="}
    )
    conn, recorder, seen = await _serve(tmp_path, cfg)
    port = conn.port
    body = json.dumps({"chat": {"id": "c"}, "text": "x"}).encode()
    good = (
        {"authorization": "Bearer t0k"}
        if auth == "bearer"
        else {"x-sig": "sha256=" + hmac.new(b"s", body, hashlib.sha256).hexdigest()}
    )
    try:
        async with httpx.AsyncClient(trust_env=False) as client:
            bad = await client.post(f"http://127.0.0.1:{port}/msg", content=body)
            fine = await client.post(f"http://127.0.0.1:{port}/msg", content=body, headers=good)
    finally:
        await conn.stop()
        await recorder.writer.close()
    assert bad.status_code == 401 and fine.status_code == 200
    assert len(seen) == 2


def test_json_path_subset() -> None:
    body = {"a": {"b": [{"c": "x"}]}, "k y": 1}
    assert json_path("$.a.b[0].c", body) == "x"
    assert json_path("$['k y']", body) == 1
    assert json_path("$.a.missing", body) is None
