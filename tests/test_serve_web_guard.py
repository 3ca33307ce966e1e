"""`serve-web` on 127.0.0.1: pages and WebSockets for another Host or Origin are refused (DNS
rebinding, cross-site WebSocket hijacking), the page loads nothing from outside the machine, and a
browser session's demo project is gone once the session ends. Clients: httpx and aiohttp."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import httpx
import pytest

from tests.test_chat_support import demo_project
from tests.waiting import LIMIT, announced_port


def _start(args: list[str], tmp: Path) -> tuple[subprocess.Popen[str], int]:
    """`serve-web` on port 0: the port it says the OS gave it (it listens from then on)."""
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "zymi_tui", "serve-web", *args, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    port, _ = announced_port(proc.stdout, "serving zymi-tui on")
    return proc, port


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=LIMIT)
    assert proc.returncode == 0, err
    return out


@pytest.fixture
def project_server(tmp_path: Path) -> Iterator[int]:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc, port = _start(["-d", str(demo_project(tmp_path))], tmp)
    yield port
    _stop(proc)


def _get(port: int, path: str = "/", **headers: str) -> httpx.Response:
    with httpx.Client(trust_env=False) as client:
        return client.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=LIMIT)


async def _ws_status(port: int, headers: dict[str, str]) -> int:
    """101 if the WebSocket opens (it is closed again at once), else the handshake's HTTP status."""
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(f"ws://127.0.0.1:{port}/ws", headers=headers, autoping=False):
                return 101
        except aiohttp.WSServerHandshakeError as e:
            return e.status


async def _ws_statuses(port: int, attempts: list[dict[str, str]]) -> list[int]:
    return [await asyncio.wait_for(_ws_status(port, headers), 30) for headers in attempts]


def test_foreign_host_or_origin_is_refused_for_pages_and_websockets(project_server: int) -> None:
    port = project_server
    here = f"http://127.0.0.1:{port}"
    assert _get(port).status_code == 200
    assert _get(port, Host=f"localhost:{port}").status_code == 200
    assert _get(port, Origin=here).status_code == 200
    for headers in (
        {"Host": "evil.example"},  # DNS rebinding: the attacker's name, resolved to 127.0.0.1
        {"Host": f"evil.example:{port}"},
        {"Host": f"127.0.0.1:{port + 1}"},
        {"Origin": "http://evil.example"},
        {"Origin": f"http://127.0.0.1:{port}.evil.example"},
        {"Origin": "null"},
    ):
        for path in ("/", "/static/js/textual.js"):
            refused = _get(port, path, **headers)
            assert refused.status_code == 403, (headers, path)
            assert "serves http://127.0.0.1" in refused.text
    statuses = asyncio.run(
        _ws_statuses(
            port,
            [
                {"Origin": "http://evil.example"},  # cross-site WebSocket hijacking
                {"Origin": here, "Host": "evil.example"},
                {},  # no Origin: no browser opens a WebSocket without one
            ],
        )
    )
    assert statuses == [403, 403, 403]


# a quoted src=/href= attribute, or a CSS url(...) (lower case, as written; not JavaScript's `new URL(`)
_URL = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""")


def test_the_page_loads_nothing_from_outside_the_machine(project_server: int) -> None:
    port = project_server
    here = f"http://127.0.0.1:{port}/"
    page = _get(port).text
    refs = [a or b for a, b in _URL.findall(page)]
    assert refs, "the page references its script, styles and font"
    assert "fonts.googleapis.com" not in page
    for ref in refs:
        assert ref.startswith(here), f"the page loads {ref}"
        got = _get(port, ref[len(here) - 1 :])
        assert got.status_code == 200, ref
        if ref.endswith(".css"):  # what a stylesheet pulls in, in turn
            assert all((a or b).startswith(("data:", "/", here)) for a, b in _URL.findall(got.text)), ref
            assert "@import" not in got.text
        if ref.endswith(".js"):  # no absolute URL anywhere in the script
            assert not re.search(r"https?://", got.text), ref
    assert any(ref.endswith(".ttf") for ref in refs)  # the font, served from here


def test_a_browser_session_leaves_no_demo_folder_behind(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc, port = _start([], tmp)  # no -d: each browser tab gets a new demo project

    async def session() -> int:
        """Open a tab's WebSocket, wait for the app's first screen, close the tab."""
        received = 0
        headers = {"Origin": f"http://127.0.0.1:{port}"}
        async with (
            aiohttp.ClientSession() as client,
            client.ws_connect(f"ws://127.0.0.1:{port}/ws?width=80&height=24", headers=headers) as ws,
        ):
            while received < 2000:  # a painted screen is several kB
                msg = await ws.receive(timeout=LIMIT)
                if msg.type == aiohttp.WSMsgType.BINARY:
                    received += len(msg.data)
                elif msg.type != aiohttp.WSMsgType.TEXT:
                    break
            assert [p.name[:14] for p in tmp.iterdir()] == ["zymi-tui-demo-"]  # the session's project
        return received

    try:
        assert asyncio.run(session()) >= 2000
        deadline = time.monotonic() + LIMIT
        while list(tmp.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(tmp.iterdir()) == []
    finally:
        _stop(proc)
