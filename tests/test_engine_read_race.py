"""read_file opens the file its verdict judged, whatever the path points to by the time it runs.

A read asks no one, so the window between the verdict and the read is short; the test makes it
deterministic: the engine tells its listeners each event it records, and the verdict
(`IntentionEvaluated`) is recorded after it is given and before the tool runs. A listener swaps a link
on the path right then (to a secret outside the project, which the verdict would have denied)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from tests.test_engine_failures import _project
from tests.test_engine_write_race import swappable_link
from zymi_tui.engine.loader import load_workspace
from zymi_tui.engine.providers.base import LlmRequest, LlmResponse
from zymi_tui.engine.runner import run_pipeline
from zymi_tui.engine.runtime import close_runtime, open_runtime
from zymi_tui.events.messages import ToolCallInfo
from zymi_tui.events.stored import StoredEvent


class _ReadsOnce:
    """A model that asks to read `path`, then answers."""

    name = "openai"
    model = "mock"

    def __init__(self, path: str) -> None:
        self.path, self.requests = path, list[LlmRequest]()

    async def complete(self, request: LlmRequest) -> LlmResponse:
        self.requests.append(request)
        if len(self.requests) == 1:
            call = ToolCallInfo(id="c1", name="read_file", arguments=f'{{"path": "{self.path}"}}')
            return LlmResponse(None, [call], finish_reason="tool_calls")
        return LlmResponse("done", finish_reason="stop")


async def _read_swapping(root: Path, path: str, swap: Callable[[], None]) -> str:
    """Run a step that reads `path`, calling `swap()` once the read's verdict is recorded; the tool result
    the model got back."""
    model = _ReadsOnce(path)
    rt = await open_runtime(load_workspace(root), ["p"], None, provider=model)

    def on_event(stored: StoredEvent) -> None:
        if stored.event.type_name == "IntentionEvaluated":
            swap()  # the verdict is given; the read has not happened yet

    rt.recorder.listeners.append(on_event)
    try:
        await run_pipeline(rt, "p", {"task": "go"})
    finally:
        await close_runtime(rt)
    assert len(model.requests) == 2
    result = model.requests[1].messages[-1]
    assert result["role"] == "tool"
    return str(result["content"])


def test_a_file_link_swapped_after_the_verdict_is_not_followed(tmp_path: Path) -> None:
    root = _project(tmp_path / "project", 0, max_iterations=4, tools="read_file")
    *_, swap = swappable_link(root, tmp_path / "outside", "project notes", "PRIVATE KEY")
    assert asyncio.run(_read_swapping(root, "out/link", swap)) == "project notes"  # the file the verdict judged


def test_a_folder_swapped_for_a_link_after_the_verdict_stops_the_read(tmp_path: Path) -> None:
    root = _project(tmp_path / "project", 0, max_iterations=4, tools="read_file")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("PRIVATE KEY", encoding="utf-8")
    (root / "out").mkdir()
    (root / "out" / "notes.txt").write_text("project notes", encoding="utf-8")

    def swap() -> None:
        (root / "out").rename(root / "out.old")
        (root / "out").symlink_to(outside)  # the folder is now a link out of the project

    assert asyncio.run(_read_swapping(root, "out/notes.txt", swap)) == (
        f"[tool error] failed to read {root / 'out' / 'notes.txt'}: "
        f"{root.resolve() / 'out'} became a symbolic link after the policy's verdict"
    )


def test_an_ordinary_read_and_a_missing_file(tmp_path: Path) -> None:
    root = _project(tmp_path / "project", 0, max_iterations=4, tools="read_file")
    (root / "a.txt").write_text("hello", encoding="utf-8")
    assert asyncio.run(_read_swapping(root, "a.txt", lambda: None)) == "hello"
    assert asyncio.run(_read_swapping(root, "b/c.txt", lambda: None)) == (
        f"[tool error] failed to read {root / 'b' / 'c.txt'}: No such file or directory (os error 2)"
    )
