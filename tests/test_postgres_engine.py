"""The engine on a Postgres store: `run` records into the store project.yml names (`${env.VAR}`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_postgres_helpers import pg_url, run_cli

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
