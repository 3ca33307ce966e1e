"""The engine on a Postgres store: `run` records into the store project.yml names (`${env.VAR}`);
`resume` forks a run there; `serve` answers a request appended by another process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from zymi_tui.events.factory import open_reader, open_writer
from zymi_tui.events.kinds import Event, PipelineRequested
from zymi_tui.events.location import location_of
from zymi_tui.events.verify import verify_store

from .test_postgres_helpers import CLI, pg_url, run_cli

__all__ = ["pg_url"]


def test_run_records_into_the_projects_postgres_store(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli("init").returncode == 0  # a project on the offline demo model
    with (tmp_path / "project.yml").open("a") as f:
        f.write("\nstore: ${env.ZT_ENGINE_DB}\n")
    monkeypatch.setenv("ZT_ENGINE_DB", pg_url)

    done = run_cli("run", "main", "-i", "task=list the files")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / ".zymi" / "events.db").exists()  # nothing went to the default SQLite file

    runs = run_cli("runs", "--raw", pg_url)
    assert runs.returncode == 0 and runs.stdout.count("\n") == 1 and '"status":"ok"' in runs.stdout.replace(" ", "")
    verify = run_cli("verify", ".")
    assert verify.returncode == 0 and "Verified " in verify.stdout
    replay = run_cli("replay", "--json", "--project", ".", pg_url)
    assert replay.returncode == 0 and '"kind": "agent"' in replay.stdout

    stream = json.loads(runs.stdout)["stream_id"]
    plan = run_cli("resume", stream, "--from-step", "process", "--dry-run")
    assert plan.returncode == 0 and "re-execute (1): process" in plan.stdout, plan.stderr
    assert run_cli("resume", stream, "--from-step", "process").returncode == 0
    assert run_cli("runs", "--raw", pg_url).stdout.count("\n") == 2
    assert run_cli("verify", pg_url).returncode == 0


async def test_serve_answers_a_request_another_machine_appends(pg_url: str, tmp_path: Path) -> None:
    """`serve` on one machine, a client on another: they share nothing but the Postgres store."""
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        assert run_cli("init").returncode == 0
    finally:
        os.chdir(old)
    with (tmp_path / "project.yml").open("a") as f:
        f.write("\nstore: ${env.ZT_SERVE_DB}\n")
    env = {**os.environ, "ZT_SERVE_DB": pg_url}
    server = subprocess.Popen(
        [*CLI, "serve", "main", "--poll-interval-ms", "50"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        banner = [server.stdout.readline() for _ in range(2)]
        assert "listening" in banner[0] and "zymi:***@" in banner[1], banner
        corr = str(uuid.uuid4())
        request = Event.new("client-7", PipelineRequested(pipeline="main", inputs={"task": "count"}), "client", corr)
        writer = await open_writer(location_of(pg_url))
        await writer.append(request)
        await writer.close()
        reader = await open_reader(location_of(pg_url))
        try:
            for _ in range(150):
                done = [se for se in await reader.read_kinds(["pipeline_completed"]) if se.event.correlation_id == corr]
                if done:
                    break
                await asyncio.sleep(0.1)
            assert done and done[0].event.stream_id == "client-7"
            assert [v.ok for v in (await verify_store(reader)).verdicts] == [True] * len(await reader.streams())
        finally:
            await reader.close()
    finally:
        server.kill()  # never outlives the test, whatever ended it
        server.wait()
