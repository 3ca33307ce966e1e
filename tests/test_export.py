"""Exports: LHAR validates against context-lens's schema, one session per file, and carries the exact
request bodies the real engine sent, roles, tool-definition tokens and compaction flags as context-lens
reads them; OTLP/JSON spans validate and carry the store's model, usage and request parameters (SQL,
requests.jsonl); `--no-content`; `context --format json|md`. Phoenix reads the pushed spans in
test_export_phoenix.py; the push's retries in test_export_push.py."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from tests.conftest import ORACLE, SCENARIOS, zymi_tui_bin

SCHEMAS = Path(__file__).parent / "schemas"
RECORDED = [s for s in SCENARIOS if (ORACLE / s / "requests.jsonl").is_file()]


def _validator(schema_file: str, definition: str | None = None) -> Draft7Validator:
    schema = json.loads((SCHEMAS / schema_file).read_text(encoding="utf-8"))
    if definition is not None:
        schema = {"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]}
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


def _run(*args: str) -> str:
    proc = subprocess.run([zymi_tui_bin(), *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _norm(body: dict[str, Any]) -> str:
    """A body with the `[memory]` block as a set of lines (zymi writes its keys in random order)."""
    messages = []
    for m in body["messages"]:
        c = m.get("content")
        if m.get("role") == "system" and isinstance(c, str) and c.startswith("[memory]\n"):
            m = {**m, "content": sorted(c.splitlines())}
        messages.append(m)
    return json.dumps({**body, "messages": messages}, sort_keys=True, ensure_ascii=False)


def _recorded_bodies(name: str) -> list[dict[str, Any]]:
    lines = (ORACLE / name / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["body"] for line in lines]


def _usage(name: str) -> list[tuple[int, int]]:
    with sqlite3.connect(f"file:{ORACLE / name / 'events.db'}?mode=ro", uri=True) as db:
        return db.execute(
            "SELECT json_extract(data, '$.kind.data.usage.input_tokens'), "
            "json_extract(data, '$.kind.data.usage.output_tokens') FROM events "
            "WHERE kind_tag = 'llm_call_completed' AND json_extract(data, '$.kind.data.usage') IS NOT NULL"
        ).fetchall()


def _model(name: str) -> str:
    doc = yaml.safe_load((ORACLE / name / "project" / "project.yml").read_text(encoding="utf-8"))
    return str(doc["llm"]["model"])


def _exact(body: dict[str, Any]) -> str:
    """A body as JSON text, key order kept (byte-equal), the `[memory]` block's lines as a set: zymi writes
    them in a random order the store does not record."""
    messages = []
    for m in body["messages"]:
        c = m.get("content")
        if m.get("role") == "system" and isinstance(c, str) and c.startswith("[memory]\n"):
            m = {**m, "content": sorted(c.splitlines())}
        messages.append(m)
    return json.dumps({**body, "messages": messages}, ensure_ascii=False)


def _calls_by_run(name: str) -> list[list[tuple[bool, bool]]]:
    """Per run stream (conversation), its LLM calls in order: (a compaction call, the agent call right
    after a compaction on its step stream), from the store's LlmCallStarted rows."""
    with sqlite3.connect(f"file:{ORACLE / name / 'events.db'}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT stream_id, json_extract(data, '$.kind.data.iteration') = 0 OR source = 'compaction' FROM events "
            "WHERE kind_tag = 'llm_call_started' ORDER BY id"
        ).fetchall()
    last: dict[str, bool] = {}
    runs: dict[str, list[tuple[bool, bool]]] = {}
    for stream, compaction in rows:
        runs.setdefault(stream.split(":step:")[0], []).append(
            (bool(compaction), not compaction and last.get(stream, False))
        )
        last[stream] = bool(compaction)
    return sorted(runs.values())


def _lhar_files(name: str, folder: Path) -> list[list[dict[str, Any]]]:
    _run("export", str(ORACLE / name / "events.db"), "--project", str(ORACLE / name / "project"),
         "--format", "lhar", "-o", f"{folder}/")  # fmt: skip
    return [[json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()] for f in sorted(folder.iterdir())]


@pytest.mark.parametrize("name", RECORDED)
def test_lhar_validates_and_holds_the_sent_bodies(name: str, tmp_path: Path) -> None:
    files = _lhar_files(name, tmp_path)
    session, entry = _validator("lhar.schema.json", "LharSessionLine"), _validator("lhar.schema.json", "LharRecord")
    for lines in files:  # context-lens reads one session per file: the first line, and no other
        assert [line["type"] for line in lines].count("session") == 1 and lines[0]["type"] == "session"
        for line in lines:
            (session if line["type"] == "session" else entry).validate(line)
    entries = [line for lines in files for line in lines if line["type"] == "entry"]
    assert Counter(_exact(e["raw"]["request_body"]) for e in entries) == Counter(
        _exact(b) for b in _recorded_bodies(name)
    )
    got = Counter((e["gen_ai"]["usage"]["input_tokens"], e["gen_ai"]["usage"]["output_tokens"]) for e in entries)
    assert got == Counter(_usage(name))


@pytest.mark.parametrize("name", RECORDED)
def test_lhar_roles_tool_tokens_and_compactions_as_context_lens_reads_them(name: str, tmp_path: Path) -> None:
    files = _lhar_files(name, tmp_path)
    assert len(files) == len(_calls_by_run(name))  # one file per conversation
    flags = sorted(
        [(e["source"]["agent_role"] == "compaction", e["context_lens"]["growth"]["compaction_detected"])
         for e in lines if e["type"] == "entry"]
        for lines in files
    )  # fmt: skip
    assert flags == _calls_by_run(name)
    for e in (line for lines in files for line in lines if line["type"] == "entry"):
        role, lens, tools = e["source"]["agent_role"], e["context_lens"], e["raw"]["request_body"].get("tools", [])
        assert role in ("main", "compaction")  # no nested run in the recordings: every agent call is the run's
        assert [d["name"] for d in lens["tool_definitions"]] == [t["function"]["name"] for t in tools]
        comp = {c["category"]: c for c in lens["composition"]}
        if tools:
            assert lens["tools_tokens"] > 0 and comp["tool_definitions"]["tokens"] == lens["tools_tokens"]
            assert comp["tool_definitions"]["count"] == len(tools)
        else:
            assert lens["tools_tokens"] == 0 and "tool_definitions" not in comp


def test_lhar_refuses_several_sessions_in_one_file() -> None:
    proc = subprocess.run([zymi_tui_bin(), "export", str(ORACLE / "chat_profile" / "events.db"), "--project",
                           str(ORACLE / "chat_profile" / "project"), "--format", "lhar"],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "2 sessions" in proc.stderr and "-o FOLDER" in proc.stderr


def _spans(out: str) -> list[dict[str, Any]]:
    """The spans of OTLP/JSON lines (one ExportTraceServiceRequest a line), each line schema-checked."""
    validator = _validator("otlp-trace.schema.json")
    spans = []
    for line in out.splitlines():
        doc = json.loads(line)
        validator.validate(doc)
        spans += [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    return spans


def _attr(span: dict[str, Any], key: str) -> Any:
    value = next((a["value"] for a in span["attributes"] if a["key"] == key), None)
    if value is None:
        return None
    return int(value["intValue"]) if "intValue" in value else next(iter(value.values()))


@pytest.mark.parametrize("name", RECORDED)
def test_otel_spans_carry_model_and_usage(name: str) -> None:
    out = _run("export", str(ORACLE / name / "events.db"), "--project", str(ORACLE / name / "project"),
               "--format", "otel")  # fmt: skip
    chats = [s for s in _spans(out) if _attr(s, "gen_ai.operation.name") == "chat"]
    assert len(chats) == len(_recorded_bodies(name))
    assert {_attr(s, "gen_ai.request.model") for s in chats} == {_model(name)}
    got = Counter((_attr(s, "gen_ai.usage.input_tokens"), _attr(s, "gen_ai.usage.output_tokens")) for s in chats)
    assert got == Counter(_usage(name))
    sent = Counter((b["temperature"], b["max_tokens"]) for b in _recorded_bodies(name))
    assert (
        Counter((_attr(s, "gen_ai.request.temperature"), _attr(s, "gen_ai.request.max_tokens")) for s in chats) == sent
    )


def test_otel_no_content_leaves_out_prompts_answers_and_tool_io() -> None:
    name = "memory"
    args = [str(ORACLE / name / "events.db"), "--project", str(ORACLE / name / "project"), "--format", "otel"]
    with_content, without = _spans(_run("export", *args)), _spans(_run("export", *args, "--no-content"))
    private = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
               "gen_ai.tool.definitions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}  # fmt: skip
    assert private <= {a["key"] for s in with_content for a in s["attributes"]}
    assert private.isdisjoint({a["key"] for s in without for a in s["attributes"]})
    assert len(without) == len(with_content)
    secret = "Съешь же ещё"  # a memory value the agent wrote: in prompts and tool arguments only
    assert secret in json.dumps(with_content, ensure_ascii=False) and secret not in json.dumps(
        without, ensure_ascii=False
    )


def test_context_json_is_the_exact_request_body_and_md_names_layers() -> None:
    name = "memory"
    calls = json.loads((ORACLE / name / "expected.json").read_text(encoding="utf-8"))
    bodies = _recorded_bodies(name)
    for call in calls:
        args = [str(ORACLE / name / "events.db"), "--project", str(ORACLE / name / "project"),
                "--stream", call["stream_id"], "--seq", str(call["sequence"])]  # fmt: skip
        got = json.loads(_run("context", *args, "--format", "json"))["request_body"]
        assert _norm(got) == _norm(bodies[call["request_n"] - 1])
    md = _run("context", *args, "--format", "md")
    assert "| # | layer | role | seq | bytes | ~tokens | reason |" in md
    assert "kept: system prompt" in md


@pytest.mark.parametrize(("screen", "text"), [("advice", "hard_cap_exceeded"), ("life", "messages")])
def test_svg_of_a_screen(tmp_path: Path, screen: str, text: str) -> None:
    import xml.etree.ElementTree as ET

    out = tmp_path / f"{screen}.svg"
    _run("export", str(ORACLE / "hard_cap" / "events.db"), "--project", str(ORACLE / "hard_cap" / "project"),
         "--format", "svg", "--screen", screen, "--size", "100x30", "-o", str(out))  # fmt: skip
    svg = out.read_text(encoding="utf-8")
    assert ET.fromstring(svg).tag.endswith("svg")
    assert text in svg.replace("&#160;", " ")


def test_otel_without_a_project_leaves_out_the_guessed_prefix(tmp_path: Path) -> None:
    """No project: the input messages are the recorded history only, never the rebuild's placeholder prefix."""
    import shutil

    shutil.copy(ORACLE / "memory" / "events.db", tmp_path / "events.db")
    proc = subprocess.run([zymi_tui_bin(), "export", str(tmp_path / "events.db"), "--format", "otel"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    chats = [s for s in _spans(proc.stdout) if _attr(s, "gen_ai.operation.name") == "chat"]
    assert len(chats) == len(_recorded_bodies("memory"))
    assert all(_attr(s, "zymi.context.prefix_inferred") is True for s in chats)
    assert all(_attr(s, "gen_ai.system_instructions") is None for s in chats)
    assert "inferred" not in json.dumps([_attr(s, "gen_ai.input.messages") for s in chats])
    first_user = json.loads(_attr(chats[-1], "gen_ai.input.messages"))
    assert first_user and all(m["role"] in ("user", "system", "assistant", "tool") for m in first_user)
