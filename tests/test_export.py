"""Exports: LHAR validates against context-lens's schema and carries the exact request bodies the
real engine sent; OTLP/JSON spans validate and carry the store's model and usage (SQL); `context
--format json|md`."""

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


@pytest.mark.parametrize("name", RECORDED)
def test_lhar_validates_and_holds_the_sent_bodies(name: str) -> None:
    out = _run("export", str(ORACLE / name / "events.db"), "--project", str(ORACLE / name / "project"),
               "--format", "lhar")  # fmt: skip
    lines = [json.loads(line) for line in out.splitlines()]
    session, entry = _validator("lhar.schema.json", "LharSessionLine"), _validator("lhar.schema.json", "LharRecord")
    for line in lines:
        (session if line["type"] == "session" else entry).validate(line)
    entries = [line for line in lines if line["type"] == "entry"]
    assert lines[0]["type"] == "session"
    assert sorted(_norm(e["raw"]["request_body"]) for e in entries) == sorted(_norm(b) for b in _recorded_bodies(name))
    got = Counter((e["gen_ai"]["usage"]["input_tokens"], e["gen_ai"]["usage"]["output_tokens"]) for e in entries)
    assert got == Counter(_usage(name))


@pytest.mark.parametrize("name", RECORDED)
def test_otel_spans_carry_model_and_usage(name: str) -> None:
    out = _run("export", str(ORACLE / name / "events.db"), "--project", str(ORACLE / name / "project"),
               "--format", "otel")  # fmt: skip
    doc = json.loads(out)
    _validator("otlp-trace.schema.json").validate(doc)
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == len(_recorded_bodies(name))

    def attr(span: dict[str, Any], key: str) -> Any:
        value = next(a["value"] for a in span["attributes"] if a["key"] == key)
        return int(value["intValue"]) if "intValue" in value else value["stringValue"]

    assert {attr(s, "gen_ai.request.model") for s in spans} == {_model(name)}
    got = Counter((attr(s, "gen_ai.usage.input_tokens"), attr(s, "gen_ai.usage.output_tokens")) for s in spans)
    assert got == Counter(_usage(name))


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
