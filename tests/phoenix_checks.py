"""A real OTLP consumer for the suite: an Arize Phoenix server on loopback, and the checks its REST API
answers about an oracle store pushed to it (`zymi-tui export --format otel --endpoint`).

The expected figures come from the oracle, never from the export: runs, calls and tool calls counted
in the store with SQL, request messages from `requests.jsonl` (what zymi sent).

Run as a script to print the checks that hold for a checkout's `zymi-tui`:
    python -m tests.phoenix_checks [--checkout DIR]
A checkout whose export cannot push (no `--endpoint`) has its OTLP/JSON file converted to protobuf
and posted as is (Phoenix takes protobuf only).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.leftovers import die_with_parent

ORACLE = Path(__file__).resolve().parent / "oracle"
STORES = sorted(p.name for p in ORACLE.iterdir() if (p / "requests.jsonl").is_file())
START_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Phoenix:
    url: str
    process: subprocess.Popen[bytes]
    started_s: float


@contextlib.contextmanager
def phoenix_server(workdir: Path) -> Iterator[Phoenix]:
    """`phoenix serve` on free loopback ports, its database in `workdir`; killed (its process group) at the end,
    or with this process if that is killed first."""
    port, grpc = free_port(), free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc), "PHOENIX_TELEMETRY_ENABLED": "false"}  # fmt: skip
    exe = Path(sys.executable).with_name("phoenix")
    log = (workdir / "phoenix.log").open("wb")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [str(exe), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=die_with_parent,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"phoenix serve exited {proc.returncode}: {(workdir / 'phoenix.log').read_text()[-2000:]}"
                )
            if time.monotonic() - t0 > START_TIMEOUT_S:
                raise RuntimeError(f"phoenix serve not ready after {START_TIMEOUT_S} s")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/", timeout=2).status_code == 200:
                    break
            time.sleep(0.3)
        yield Phoenix(url, proc, time.monotonic() - t0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _all_spans(url: str, project: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
        r = httpx.get(f"{url}/v1/projects/{project}/spans", params=params, timeout=30)
        if r.status_code == 404:  # no span of this project arrived yet
            return out
        r.raise_for_status()
        doc = r.json()
        out += doc["data"]
        cursor = doc.get("next_cursor")
        if not cursor:
            return out


def spans(url: str, project: str, quiet_s: float = 2.0, timeout_s: float = 60) -> list[dict[str, Any]]:
    """Every span of a Phoenix project, once their number has not changed for `quiet_s` (Phoenix
    ingests asynchronously), or when the time is up."""
    deadline = time.monotonic() + timeout_s
    count, since = -1, time.monotonic()
    while True:
        out = _all_spans(url, project)
        if len(out) != count:
            count, since = len(out), time.monotonic()
        elif out and time.monotonic() - since >= quiet_s:
            return out
        if time.monotonic() > deadline:
            return out
        time.sleep(0.3)


def settled_checks(url: str, project: str, timeout_s: float = 120) -> dict[str, bool]:
    """`checks` of a project's spans, read again while one fails, until the time is up: on a busy machine
    Phoenix can hold a batch back past `spans`' quiet period, and a span not yet ingested is not a span
    the export left out."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = checks(project, spans(url, project))
        if all(got.values()) or time.monotonic() > deadline:
            return got
        time.sleep(1.0)


# -- what the oracle says --------------------------------------------------------------------------
def _sql(name: str, query: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(f"file:{ORACLE / name / 'events.db'}?mode=ro", uri=True)) as db:
        return db.execute(query).fetchall()


def runs(name: str) -> int:
    return int(_sql(name, "SELECT count(*) FROM events WHERE kind_tag = 'pipeline_requested'")[0][0])


def tool_call_ids(name: str) -> Counter[str]:
    rows = _sql(
        name, "SELECT json_extract(data, '$.kind.data.call_id') FROM events WHERE kind_tag = 'tool_call_completed'"
    )
    return Counter(r[0] for r in rows)


def sent_messages(name: str) -> Counter[str]:
    """Each recorded request's messages as (role, text) pairs, the `[memory]` block as a set of lines."""
    out: Counter[str] = Counter()
    for line in (ORACLE / name / "requests.jsonl").read_text(encoding="utf-8").splitlines():
        out[_key([(m["role"], m.get("content") or "") for m in json.loads(line)["body"]["messages"]])] += 1
    return out


def _key(pairs: list[tuple[str, str]]) -> str:
    norm = [(r, sorted(c.splitlines()) if r == "system" and c.startswith("[memory]\n") else c) for r, c in pairs]
    return json.dumps(norm, ensure_ascii=False)


def _texts(value: Any) -> str:
    return "".join(p.get("content", "") for p in json.loads(value) if p.get("type") == "text") if value else ""


def span_messages(span: dict[str, Any]) -> str | None:
    """An LLM span's request as (role, text) pairs: its system instructions, then its input messages."""
    a = span["attributes"]
    if "gen_ai.input.messages" not in a:
        return None
    pairs = [("system", _texts(a["gen_ai.system_instructions"]))] if a.get("gen_ai.system_instructions") else []
    for m in json.loads(a["gen_ai.input.messages"]):
        text = "".join(p.get("content") or "" for p in m["parts"] if p.get("type") == "text")
        text += "".join(p.get("response") or "" for p in m["parts"] if p.get("type") == "tool_call_response")
        pairs.append((m["role"], text))
    return _key(pairs)


# -- the checks -------------------------------------------------------------------------------------
def checks(name: str, held: list[dict[str, Any]]) -> dict[str, bool]:
    """What Phoenix must hold for store `name` (each check's name says it)."""
    llm = [s for s in held if s["span_kind"] == "LLM" or s["name"].startswith("chat ")]
    tools = [s for s in held if s["name"].startswith("execute_tool ")]
    by_id = {s["context"]["span_id"]: s for s in held}
    traces = Counter(s["context"]["trace_id"] for s in held)
    roots = Counter(s["context"]["trace_id"] for s in held if not s["parent_id"])
    calls = sum(sent_messages(name).values())
    return {
        "an LLM span per recorded call": len(llm) == calls,
        "one trace per run": len(traces) == runs(name),
        "each trace rooted once": bool(traces) and all(roots[t] == 1 for t in traces),
        "LLM and tool spans have their parent in their trace": bool(llm)
        and all(
            s["parent_id"] in by_id and by_id[s["parent_id"]]["context"]["trace_id"] == s["context"]["trace_id"]
            for s in llm + tools
        ),
        "LLM spans hold the messages zymi sent": Counter(span_messages(s) for s in llm) == sent_messages(name),
        "a tool span per ToolCallCompleted": Counter(s["attributes"].get("gen_ai.tool.call.id") for s in tools)
        == tool_call_ids(name),
    }


# -- pushing a store ----------------------------------------------------------------------------------
def push(exe: str, name: str, url: str) -> subprocess.CompletedProcess[str]:
    args = [exe, "export", str(ORACLE / name / "events.db"), "--project", str(ORACLE / name / "project"),
            "--format", "otel", "--endpoint", url, "--service", name]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


def push_json_file(exe: str, name: str, url: str) -> None:
    """For a checkout with no --endpoint: its OTLP/JSON, ids converted from hex to base64, sent as protobuf."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    out = subprocess.run([exe, "export", str(ORACLE / name / "events.db"), "--project", str(ORACLE / name / "project"),
                          "--format", "otel"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    for line in out.splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            rs.setdefault("resource", {}).setdefault("attributes", []).append(
                {"key": "openinference.project.name", "value": {"stringValue": name}}
            )
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    for k in ("traceId", "spanId", "parentSpanId"):
                        if s.get(k):
                            s[k] = base64.b64encode(bytes.fromhex(s[k])).decode()
        body = json_format.Parse(json.dumps(doc), ExportTraceServiceRequest()).SerializeToString()
        httpx.post(
            f"{url}/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}
        ).raise_for_status()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parent.parent)
    a = p.parse_args()
    exe = str(a.checkout / ".venv" / "bin" / "zymi-tui")
    with tempfile.TemporaryDirectory(prefix="phoenix-") as tmp, phoenix_server(Path(tmp)) as px:
        print(f"phoenix ready in {px.started_s:.1f} s at {px.url}")
        held = total = 0
        for name in STORES:
            r = push(exe, name, px.url)
            if r.returncode != 0:
                print(f"{name}: export --endpoint refused ({r.stderr.strip()[:100]}); pushing its OTLP/JSON file")
                push_json_file(exe, name, px.url)
            got = checks(name, spans(px.url, name))
            for check, ok in got.items():
                print(f"  {name}: {'ok  ' if ok else 'FAIL'} {check}")
            held += sum(got.values())
            total += len(got)
        print(f"{held} of {total} checks hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
