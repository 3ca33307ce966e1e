"""Conformance: our engine, driven by the oracle harness exactly as the real zymi was, must send the very
request bodies zymi sent and write the same events per stream, in a store the real `zymi` accepts.

Ground truth: tests/oracle/<scenario>/ (recorded from zymi-core 0.9.3). Nothing here is computed by
the code under test except the store and the request log being checked.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HARNESS, NO_ZYMI, ORACLE, ROOT
from tests.waiting import LIMIT

ENGINE_BIN = Path(sys.executable).parent / "zymi-tui"
REAL_ZYMI = Path(sys.executable).parent / "zymi"
ORACLE_WORK = "/tmp/oracle"  # where the oracle was recorded (a path inside one tool result)
RUN_SCENARIOS = ["coding_default", "coding_compaction", "hard_cap", "memory"]
SERVE_SCENARIOS = ["chat_profile", "fresh_mode"]


def _requests(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _normal(body: dict[str, Any]) -> dict[str, Any]:
    """The compared part of a body; the `[memory]` lines of zymi are in HashMap order, so compare them as a set."""
    out = {k: body.get(k) for k in ("model", "messages", "tools", "temperature", "max_tokens")}
    msgs = []
    for m in body.get("messages") or []:
        c = m.get("content")
        if m.get("role") == "system" and isinstance(c, str) and c.startswith("[memory]\n"):
            m = {**m, "content": sorted(c.split("\n"))}
        msgs.append(m)
    out["messages"] = msgs
    return out


def _kinds_by_stream(db: Path) -> dict[str, list[str]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT stream_id, kind_tag FROM events ORDER BY stream_id, sequence").fetchall()
    finally:
        con.close()
    out: dict[str, list[str]] = {}
    for stream, tag in rows:
        out.setdefault(stream, []).append(tag)
    return out


def _stream_key(stream: str) -> str:
    """Run streams are `pipeline-<name>-<uuid4>`: compare them by shape, not by the random id."""
    run, _, step = stream.partition(":step:")
    if run.startswith("pipeline-"):
        run = run.rsplit("-", 5)[0]
    return run + (":step:" + step if step else "")


def private_work_dir() -> Path:
    """A fresh folder whose path is as long as /tmp/oracle, so every recorded byte count still holds."""
    while True:
        path = Path("/tmp") / ("o" + secrets.token_hex(3)[:5])
        assert len(str(path)) == len(ORACLE_WORK)
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every scenario run once through the harness with ZYMI_BIN = our engine."""
    out = tmp_path_factory.mktemp("ours")
    work = private_work_dir()
    try:
        env = {**os.environ, "ZYMI_BIN": str(ENGINE_BIN), "ORACLE_OUT": str(out), "ORACLE_WORK": str(work)}
        # one harness process per scenario, all at once (each scenario has its own folder and ports)
        procs = [
            subprocess.Popen(
                [sys.executable, str(HARNESS), name],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=ROOT,
            )
            for name in RUN_SCENARIOS + SERVE_SCENARIOS
        ]
        for proc in procs:
            output, _ = proc.communicate(timeout=600)
            assert proc.returncode == 0, output
            assert "FAILED" not in output, output
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # the harness records its work folder in one tool result (coding_default); zymi's was /tmp/oracle
    for log in out.glob("*/requests.jsonl"):
        log.write_text(log.read_text(encoding="utf-8").replace(str(work), ORACLE_WORK), encoding="utf-8")
    return out


@pytest.mark.parametrize("scenario", RUN_SCENARIOS + SERVE_SCENARIOS)
def test_request_bodies_equal_recorded(produced: Path, scenario: str) -> None:
    ours = _requests(produced / scenario / "requests.jsonl")
    theirs = _requests(ORACLE / scenario / "requests.jsonl")
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert _normal(a["body"]) | {"model": None} == _normal(b["body"]) | {"model": None}, f"request #{i}"


@pytest.mark.parametrize("scenario", RUN_SCENARIOS + SERVE_SCENARIOS)
def test_request_bodies_are_as_many_bytes_as_zymis(produced: Path, scenario: str) -> None:
    """zymi sends compact JSON (serde_json: no spaces, non-ASCII as UTF-8): each body we send has the byte
    length of the body zymi sent (the fake model's `content_length`, the request's Content-Length)."""
    ours = [r["content_length"] for r in _requests(produced / scenario / "requests.jsonl")]
    theirs = [r["content_length"] for r in _requests(ORACLE / scenario / "requests.jsonl")]
    assert ours == theirs


@pytest.mark.parametrize("scenario", RUN_SCENARIOS + SERVE_SCENARIOS)
def test_events_per_stream_equal_recorded(produced: Path, scenario: str) -> None:
    ours = {_stream_key(s): k for s, k in _kinds_by_stream(produced / scenario / "events.db").items()}
    theirs = {_stream_key(s): k for s, k in _kinds_by_stream(ORACLE / scenario / "events.db").items()}
    assert ours == theirs


@pytest.mark.skipif(not REAL_ZYMI.exists(), reason=NO_ZYMI)
@pytest.mark.parametrize("scenario", RUN_SCENARIOS + SERVE_SCENARIOS)
def test_real_zymi_reads_our_store(produced: Path, scenario: str, tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".zymi").mkdir(parents=True)
    (project / "project.yml").write_text("name: check\n", encoding="utf-8")
    src = sqlite3.connect(f"file:{produced / scenario / 'events.db'}?mode=ro", uri=True)
    dst = sqlite3.connect(project / ".zymi" / "events.db")
    src.backup(dst)
    src.close()
    dst.close()
    env = {**os.environ, "ZYMI_HOME": str(tmp_path / "home")}
    for args in (["verify"], ["events", "--raw", "--limit", "100000"], ["runs", "--raw"]):
        proc = subprocess.run(
            [str(REAL_ZYMI), "--no-venv", *args, "-d", str(project)],
            capture_output=True,
            text=True,
            env=env,
            timeout=LIMIT,
        )
        assert proc.returncode == 0, f"zymi {args[0]}: {proc.stderr}"
    proc = subprocess.run(
        [str(REAL_ZYMI), "--no-venv", "verify", "-d", str(project)], capture_output=True, text=True, env=env
    )
    assert "Verified" in proc.stdout
