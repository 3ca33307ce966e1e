"""Helpers of the chat tests: a demo project, the chat app under Pilot, capturing or hanging providers, real zymi."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.waiting import LIMIT
from zymi_tui.engine.providers.base import LlmRequest, LlmResponse, Provider
from zymi_tui.engine.providers.demo_workspace import write_demo_project
from zymi_tui.events.sqlite_read import SqliteReader
from zymi_tui.events.stored import StoredEvent
from zymi_tui.tui.chat.app import ChatApp
from zymi_tui.tui.chat.screen import ChatScreen
from zymi_tui.tui.chat.session import ChatOptions, TimedProvider

ROOT = Path(__file__).resolve().parents[1]
SIZE = (150, 46)


def zymi() -> str:
    """The real zymi-core 0.9.3 binary (the test oracle)."""
    local = ROOT / ".venv" / "bin" / "zymi"
    found = str(local) if local.exists() else shutil.which("zymi")
    assert found, "the real zymi binary is not installed (pip install -e '.[test]')"
    return found


def demo_project(tmp: Path, policy_extra: str = "") -> Path:
    root = tmp / "demo"
    root.mkdir(parents=True)
    write_demo_project(root, "demo")
    if policy_extra:
        text = (root / "project.yml").read_text()
        text = text.replace("policy:\n  enabled: true\n", f"policy:\n  enabled: true\n{policy_extra}")
        (root / "project.yml").write_text(text)
    return root


class Capture:
    """Wraps a provider and keeps every request it was sent (compaction requests included)."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name, self.model = inner.name, inner.model
        self.requests: list[LlmRequest] = []

    async def complete(self, request: LlmRequest) -> LlmResponse:
        self.requests.append(request)
        return await self.inner.complete(request)

    def agent_requests(self) -> list[LlmRequest]:
        return [r for r in self.requests if r.tools]


class Hang:
    """Answers like its inner provider until call `hang_at` (1-based), which never returns."""

    def __init__(self, inner: Provider, hang_at: int) -> None:
        self.inner = inner
        self.name, self.model = inner.name, inner.model
        self.hang_at = hang_at
        self.calls = 0
        self.hanging = asyncio.Event()

    async def complete(self, request: LlmRequest) -> LlmResponse:
        self.calls += 1
        if self.calls >= self.hang_at:
            self.hanging.set()
            await asyncio.Event().wait()
        return await self.inner.complete(request)


def chat_app(project: Path, **options: Any) -> ChatApp:
    return ChatApp(ChatOptions(project_dir=project, **options), theme="textual-dark")


def timed(app: ChatApp) -> TimedProvider:
    assert app.session is not None
    provider = app.session.rt.provider
    assert isinstance(provider, TimedProvider)
    return provider


def capture_requests(app: ChatApp) -> Capture:
    """The app's provider wrapped in a `Capture`: every request sent from now on is kept."""
    provider = timed(app)
    capture = provider.inner = Capture(provider.inner)
    return capture


async def wait_for(pilot: Pilot[Any], condition: Any, timeout: float = LIMIT) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        assert loop.time() < end, "timed out waiting in the Pilot test"
        await pilot.pause(0.02)


async def chat_screen(pilot: Pilot[Any]) -> ChatScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ChatScreen))
    screen = pilot.app.screen
    assert isinstance(screen, ChatScreen)
    return screen


async def send(pilot: Pilot[Any], text: str, *, wait: bool = True) -> None:
    """Type a message (set at once: a 1 MB paste), press Enter, and wait for the turn to end."""
    screen = await chat_screen(pilot)
    screen.query_one("#prompt").value = text  # type: ignore[attr-defined]
    await pilot.press("enter")
    if wait:
        await finish_turn(pilot)


async def finish_turn(pilot: Pilot[Any]) -> None:
    screen = await chat_screen(pilot)
    worker = screen.turn_worker
    if worker is not None:
        await wait_for(pilot, lambda: worker.is_finished)
    await settle(pilot, screen)


async def settle(pilot: Pilot[Any], node: Any) -> None:
    """Wait for the workers of one screen (a host app, e.g. the dashboard, has workers that never end)."""
    await wait_for(pilot, lambda: not any(w.node is node and not w.is_finished for w in pilot.app.workers))
    await pilot.pause()


async def store_events(project: Path) -> list[StoredEvent]:
    reader = await SqliteReader.open(project / ".zymi" / "events.db")
    try:
        page = await reader.read_after(0, 1_000_000)
        return list(page.events)
    finally:
        await reader.close()


def zymi_raw(project: Path) -> list[dict[str, Any]]:
    """`zymi events --raw` of the real engine: every event it can read from our store."""
    run = subprocess.run(
        [zymi(), "events", "-d", str(project), "--raw", "-l", "1000000"],
        capture_output=True, text=True, timeout=LIMIT, check=True,
    )  # fmt: skip
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


def zymi_verify(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([zymi(), "verify", "-d", str(project)], capture_output=True, text=True, timeout=LIMIT)


def cli(*args: str, stdin: str | None = None, timeout: float = LIMIT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zymi_tui", *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
