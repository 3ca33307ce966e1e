"""A run that fails in `serve` with a fault of ours (not a halt zymi defines) is sealed as failed and said
on stderr: it never stays open in a serve that keeps running (a test waiting for its end row waited
its whole limit, and `runs` would show it running for as long as serve lives)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import zymi_tui_bin
from tests.waiting import LIMIT
from zymi_tui.engine import serve as serve_module
from zymi_tui.engine.loader import load_workspace
from zymi_tui.engine.runtime import close_runtime, open_runtime
from zymi_tui.events.kinds import PipelineCompleted, PipelineRequested

CORR = "6f1c1f7e-0f7e-4a52-9a55-0d6a7d1b2c3d"


async def test_an_unexpected_fault_seals_the_run_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    init = subprocess.run(
        [zymi_tui_bin(), "init", "--example", "demo"], cwd=tmp_path, capture_output=True, timeout=LIMIT
    )
    assert init.returncode == 0, init.stderr

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(serve_module, "run_pipeline", broken)
    rt = await open_runtime(load_workspace(tmp_path), ["chat"], None, printer=lambda _: None)
    try:
        router = serve_module.Router(rt, ["chat"], lambda _: None)
        rt.recorder.listeners.append(router.on_event)
        await rt.recorder.emit("s1", PipelineRequested(pipeline="chat", inputs={"message": "hi"}), "test", CORR)
        await asyncio.wait_for(asyncio.gather(*router.tasks), LIMIT)
        rows = await rt.reader.read_kinds(["pipeline_completed"])
    finally:
        await close_runtime(rt)
    assert len(rows) == 1, "the run was left open"
    done = rows[0].event.kind
    assert isinstance(done, PipelineCompleted) and not done.success and done.error == "RuntimeError: a bug of ours"
    assert rows[0].event.stream_id == "s1" and rows[0].event.correlation_id == CORR
    assert "the run on stream s1 failed: RuntimeError: a bug of ours" in capsys.readouterr().err
