"""`import FILE`: LHAR and OTLP/JSON files into a zymi store, read back by the real `zymi`.

The LHAR answer key is the real zymi-core engine itself: the request bodies it sent in the oracle's
coding_default scenario (tests/oracle/coding_default/requests.jsonl), written as context-lens entries,
are a foreign agent's captures. Taken in, each call's recorded context is that body; zymi's own policy
(the coding profile, its defaults) replayed over them as a what-if sends exactly those bodies again.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import ORACLE, requires_zymi, zymi_bin, zymi_tui_bin
from tests.test_collect_real_client import content_bytes, replay, wire_shape


def requests(scenario: str) -> list[dict[str, Any]]:
    lines = (ORACLE / scenario / "requests.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def lhar_from(reqs: list[dict[str, Any]], *, responses: bool) -> str:
    """context-lens entries (one session) holding the bodies the real engine sent."""
    out = [{"type": "session", "trace_id": "t1", "started_at": "2026-12-01T10:00:00Z", "tool": "zymi", "model": "m"}]
    for r in reqs:
        out.append(
            {
                "type": "entry",
                "id": f"e{r['n']}",
                "trace_id": "t1",
                "span_id": f"s{r['n']}",
                "parent_span_id": None,
                "timestamp": f"2026-12-01T10:00:{r['n']:02d}Z",
                "sequence": r["n"],
                "source": {
                    "tool": "zymi",
                    "tool_version": None,
                    "agent_role": "work",
                    "collector": "test",
                    "collector_version": "0",
                },
                "raw": {"request_body": r["body"], "response_body": r["response"] if responses else None},
            }
        )
    return "\n".join(json.dumps(line) for line in out) + "\n"


def zymi_tui(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}  # the replay table's notes on one line
    return subprocess.run([zymi_tui_bin(), *args], capture_output=True, text=True, timeout=120, env=env)


def zymi_raw(folder: Path, kind: str) -> list[dict[str, Any]]:
    zb = zymi_bin()
    assert zb is not None
    done = subprocess.run([zb, "events", "--raw", "-k", kind, "-l", "10000", "-d", str(folder)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def verify(folder: Path) -> None:
    zb = zymi_bin()
    assert zb is not None
    done = subprocess.run([zb, "verify", "-d", str(folder)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Verified" in done.stdout, done.stdout + done.stderr


@requires_zymi
def test_zymis_own_requests_as_lhar_replay_exactly_under_zymis_policy(tmp_path: Path) -> None:
    reqs = [r for r in requests("coding_default") if r["kind"] == "agent"]
    lhar = tmp_path / "capture.lhar"
    lhar.write_text(lhar_from(reqs, responses=False))
    done = zymi_tui("import", str(lhar), "-d", str(tmp_path / "store"))
    assert done.returncode == 0, done.stderr
    assert str((tmp_path / "store" / ".zymi" / "events.db").resolve()) in done.stdout
    verify(tmp_path / "store")
    started = [e["kind"]["data"] for e in zymi_raw(tmp_path / "store", "llm_call_started")]
    assert [(s["message_count"], s["approx_context_chars"]) for s in started] == [
        (len(r["body"]["messages"]), sum(content_bytes(m) for m in r["body"]["messages"])) for r in reqs
    ]
    # zymi masked older tool results as the run went on: to the store, a foreign agent that rewrote them
    recorded = replay(tmp_path / "store")
    assert {r["knobs_source"] for r in recorded} == {"agent"}
    assert sum(r["chars"] != r["recorded_chars"] for r in recorded) > 0
    table = zymi_tui("replay", str(tmp_path / "store"))
    assert "≠" not in table.stdout and "rewritten by the agent" in table.stdout
    advised = zymi_tui("advise", str(tmp_path / "store"), "--format", "json")
    assert advised.returncode == 0, advised.stderr
    assert "15 of its calls sent less than that" in json.loads(advised.stdout)["caveat"]
    # zymi's own policy over the same history sends what zymi sent
    whatif = replay(tmp_path / "store", "--profile", "coding")
    assert all(r["whatif"] for r in whatif)
    assert [[wire_shape(m) for m in r["messages"]] for r in whatif] == [
        [wire_shape(m) for m in r["body"]["messages"]] for r in reqs
    ]


@requires_zymi
def test_lhar_response_bodies_give_usage_and_answers(tmp_path: Path) -> None:
    reqs = [r for r in requests("coding_default") if r["kind"] == "agent"][:3]
    lhar = tmp_path / "capture.lhar"
    lhar.write_text(lhar_from(reqs, responses=True))
    assert zymi_tui("import", str(lhar), "-d", str(tmp_path)).returncode == 0
    completed = [e["kind"]["data"] for e in zymi_raw(tmp_path, "llm_call_completed")]
    assert [c["usage"]["input_tokens"] for c in completed] == [r["response"]["usage"]["prompt_tokens"] for r in reqs]
    assert [c["finish_reason"] for c in completed] == [r["response"]["choices"][0]["finish_reason"] for r in reqs]


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def _span(span_id: str, parent: str | None, name: str, start: int, attrs: dict[str, Any]) -> dict[str, Any]:
    out = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": span_id, "name": name,
           "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1_000_000),
           "attributes": [_attr(k, v) for k, v in attrs.items()]}  # fmt: skip
    if parent:
        out["parentSpanId"] = parent
    return out


def _request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    resource = {"attributes": [_attr("service.name", "shop-agent")]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


SYSTEM, TASK = _text("system", "You sell shoes."), _text("user", "Is size 44 in stock?")
CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "stock", "arguments": {"size": 44}}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "3 pairs"}]}
T0 = 1_796_000_000_000_000_000


@requires_zymi
def test_an_otlp_json_file_maps_chat_tool_and_agent_spans(tmp_path: Path) -> None:
    """Two requests, one per line (the Collector's file exporter); hex ids; a model-call span without
    content is counted and named, not written; the last tool call's result comes from its tool span."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m1"}
    first = _span("1111111111111111", "aaaaaaaaaaaaaaaa", "chat m1", T0 + 1, {
        **chat, "gen_ai.input.messages": [SYSTEM, TASK], "gen_ai.output.messages": [CALL],
        "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 5,
    })  # fmt: skip
    tool = _span("2222222222222222", "aaaaaaaaaaaaaaaa", "execute_tool stock", T0 + 2_000_000, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "c1",
    })  # fmt: skip
    second_call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c2", "name": "reserve",
                                                   "arguments": "{}"}]}  # fmt: skip
    second = _span("3333333333333333", "aaaaaaaaaaaaaaaa", "chat m1", T0 + 4_000_000, {
        **chat, "gen_ai.input.messages": [SYSTEM, TASK, CALL, RESULT], "gen_ai.output.messages": [second_call],
    })  # fmt: skip
    blank = _span("4444444444444444", "aaaaaaaaaaaaaaaa", "chat m2", T0 + 6_000_000, chat)
    reserve = _span("5555555555555555", "aaaaaaaaaaaaaaaa", "execute_tool reserve", T0 + 7_000_000, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "c2", "gen_ai.tool.call.result": "reserved",
    })  # fmt: skip
    root = _span("aaaaaaaaaaaaaaaa", None, "invoke_agent seller", T0, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "seller",
    })  # fmt: skip
    root["endTimeUnixNano"] = str(T0 + 9_000_000)
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(_request([first, tool])) + "\n" + json.dumps(_request([second, blank, reserve, root])))
    done = zymi_tui("import", str(path), "-d", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "1 model-call spans without content, skipped (chat m2 x1)" in done.stdout
    verify(tmp_path)
    started = [e for e in zymi_raw(tmp_path, "llm_call_started")]
    assert [(e["kind"]["data"]["message_count"], e["kind"]["data"]["approx_context_chars"]) for e in started] == [
        (2, len(b"You sell shoes.Is size 44 in stock?")), (4, len(b"You sell shoes.Is size 44 in stock?3 pairs")),
    ]  # fmt: skip
    assert {e["stream_id"] for e in started} == {"trace-5b8efff798038103d269b633813fc60c:step:seller"}
    results = [e["kind"]["data"] for e in zymi_raw(tmp_path, "tool_call_completed")]
    assert [(r["call_id"], r["result"]) for r in results] == [("c1", "3 pairs"), ("c2", "reserved")]
    assert results[0]["duration_ms"] == 1  # the tool span's own duration
    done_run = [e["kind"]["data"] for e in zymi_raw(tmp_path, "pipeline_completed")]
    assert done_run == [{"pipeline": "shop-agent", "success": True, "final_output": None, "error": None}]


def test_import_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    done = zymi_tui("import", str(bad), "-d", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "neither OTLP/JSON" in done.stderr and "Traceback" not in done.stderr
    missing = zymi_tui("import", str(tmp_path / "nope.json"), "-d", str(tmp_path))
    assert missing.returncode == 2 and "no such file" in missing.stderr


async def test_the_knob_editor_on_a_foreign_agent_starts_from_its_own_policy(tmp_path: Path) -> None:
    """The editor's recorded knobs are the agent's own (nothing masked); zymi's defaults typed in are a
    what-if, and its curve is what the real engine sent."""
    from textual.widgets import Input

    from tests.test_tuning_tui import settle
    from zymi_tui.events.location import SqliteStore
    from zymi_tui.events.store import EventReader
    from zymi_tui.telemetry.spans_store import AGENT_OWN_KNOBS
    from zymi_tui.tui.tuning.app import TuningApp
    from zymi_tui.tui.tuning.curve_view import CurveView
    from zymi_tui.tui.tuning.editor import TuningScreen

    reqs = [r for r in requests("coding_default") if r["kind"] == "agent"]
    (tmp_path / "capture.lhar").write_text(lhar_from(reqs, responses=False))
    assert zymi_tui("import", str(tmp_path / "capture.lhar"), "-d", str(tmp_path)).returncode == 0
    stream = zymi_raw(tmp_path, "llm_call_started")[0]["stream_id"]

    def make(reader: EventReader) -> TuningScreen:
        return TuningScreen(reader, stream, project=None)

    app = TuningApp(SqliteStore(tmp_path / ".zymi" / "events.db"), make)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TuningScreen)
        assert screen.recorded == AGENT_OWN_KNOBS
        assert screen.query_one("#knob-observation_window", Input).value == "1000000"
        for name, value in (("observation_window", "10"), ("soft_cap_chars", "400000"), ("hard_cap_chars", "600000"),
                            ("min_tail_turns", "4")):  # fmt: skip
            screen.query_one(f"#knob-{name}", Input).value = value
            await settle(pilot)
        curve = screen.query_one(CurveView).curve
        assert curve is not None and screen.what_if_calls is not None
        sent = [sum(content_bytes(m) for m in r["body"]["messages"]) for r in reqs]
        assert list(curve.what_if) == sent
        assert list(curve.recorded) == sent


@requires_zymi
async def test_the_inspector_and_context_say_sent_not_differs(tmp_path: Path) -> None:
    """A call the agent sent masked: the inspector's figures draw no ≠ (no zymi build ran) and say why
    the figures part; `context` heads the recorded figures `sent by the agent`."""
    from zymi_tui.events.factory import open_reader
    from zymi_tui.events.location import SqliteStore
    from zymi_tui.replay.store_replay import context_at
    from zymi_tui.tui.state.inspector import REWRITTEN, figures

    reqs = [r for r in requests("coding_default") if r["kind"] == "agent"]
    (tmp_path / "capture.lhar").write_text(lhar_from(reqs, responses=False))
    assert zymi_tui("import", str(tmp_path / "capture.lhar"), "-d", str(tmp_path)).returncode == 0
    last = zymi_raw(tmp_path, "llm_call_started")[-1]
    reader = await open_reader(SqliteStore(tmp_path / ".zymi" / "events.db"))
    try:
        call = await context_at(reader, last["stream_id"], last["sequence"], project=None)
    finally:
        await reader.close()
    assert call.foreign and call.rendered is not None and call.rendered.chars != call.recorded_chars
    shown = figures(call)
    assert not any(f.differs for f in shown) and shown[0].note == REWRITTEN  # masking keeps the count: only bytes
    text = zymi_tui("context", str(tmp_path), "--step-stream", last["stream_id"], "--seq", str(last["sequence"]))
    assert text.returncode == 0 and f"sent by the agent: {call.recorded_chars} bytes" in text.stdout


@requires_zymi
def test_traces_of_one_conversation_are_one_run_with_a_turn_each(tmp_path: Path) -> None:
    """Two traces sharing `gen_ai.conversation.id`, each an unnamed agent span over a chat span: one run
    stream, a turn (PipelineRequested ... PipelineCompleted) per trace, one step whose history carries
    over; the second turn's new user message lands in Layer C, so the replay rebuilds both inputs exactly."""
    conv = {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": "c-42"}
    first_answer = {"role": "assistant", "parts": [{"type": "text", "content": "Yes, 3 pairs."}]}
    second_answer = {"role": "assistant", "parts": [{"type": "text", "content": "Reserved."}]}
    ask = _text("user", "Reserve one, please.")
    one = _span("1111111111111111", "aaaaaaaaaaaaaaaa", "chat m1", T0, {
        **conv, "gen_ai.input.messages": [SYSTEM, TASK], "gen_ai.output.messages": [first_answer],
    })  # fmt: skip
    two = _span("2222222222222222", "bbbbbbbbbbbbbbbb", "chat m1", T0 + 10**9, {
        **conv, "gen_ai.input.messages": [SYSTEM, TASK, first_answer, ask], "gen_ai.output.messages": [second_answer],
    })  # fmt: skip
    agent = {"gen_ai.operation.name": "invoke_agent"}
    root_one = _span("aaaaaaaaaaaaaaaa", None, "invoke_agent", T0, agent)
    root_two = _span("bbbbbbbbbbbbbbbb", None, "invoke_agent", T0 + 10**9, agent)
    for span in (two, root_two):
        span["traceId"] = "6c8efff798038103d269b633813fc60d"
    for root in (root_one, root_two):
        root["endTimeUnixNano"] = str(int(root["startTimeUnixNano"]) + 5_000_000)
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(_request([one, root_one])) + "\n" + json.dumps(_request([two, root_two])))
    done = zymi_tui("import", str(path), "-d", str(tmp_path))
    assert done.returncode == 0, done.stderr
    verify(tmp_path)
    turns = zymi_raw(tmp_path, "pipeline_requested")
    assert [(t["stream_id"], t["kind"]["data"]["inputs"]["message"]) for t in turns] == [
        ("conversation-c-42", "Is size 44 in stock?"), ("conversation-c-42", "Reserve one, please."),
    ]  # fmt: skip
    assert len({t["correlation_id"] for t in turns}) == 2
    assert [e["kind"]["data"]["final_output"] for e in zymi_raw(tmp_path, "pipeline_completed")] == [
        "Yes, 3 pairs.", "Reserved.",
    ]  # fmt: skip
    rows = replay(tmp_path)
    assert {r["stream_id"] for r in rows} == {"conversation-c-42:step:chat"}
    assert [[m.get("content") for m in r["messages"]] for r in rows] == [
        ["You sell shoes.", "Is size 44 in stock?"],
        ["You sell shoes.", "Is size 44 in stock?", "Yes, 3 pairs.", "Reserve one, please."],
    ]
    assert [r["chars"] for r in rows] == [r["recorded_chars"] for r in rows]


@requires_zymi
def test_a_file_imported_twice_adds_nothing_the_second_time(tmp_path: Path) -> None:
    reqs = [r for r in requests("coding_default") if r["kind"] == "agent"][:4]
    (tmp_path / "capture.lhar").write_text(lhar_from(reqs, responses=True))
    assert zymi_tui("import", str(tmp_path / "capture.lhar"), "-d", str(tmp_path)).returncode == 0
    before = zymi_raw(tmp_path, "llm_call_started")
    again = zymi_tui("import", str(tmp_path / "capture.lhar"), "-d", str(tmp_path))
    assert (
        again.returncode == 0 and "0 model calls in 0 runs" in again.stdout and "4 spans received twice" in again.stdout
    )
    assert zymi_raw(tmp_path, "llm_call_started") == before
    verify(tmp_path)


async def test_the_dashboard_says_whose_caps_an_imported_agent_had(tmp_path: Path) -> None:
    from tests.tui_support import make_app, settle
    from tests.waiting import pilot_until
    from zymi_tui.tui.plot import ContextPlot
    from zymi_tui.tui.source import AGENT_CAPS

    reqs = [r for r in requests("coding_default") if r["kind"] == "agent"][:3]
    (tmp_path / "capture.lhar").write_text(lhar_from(reqs, responses=True))
    assert zymi_tui("import", str(tmp_path / "capture.lhar"), "-d", str(tmp_path)).returncode == 0
    app = make_app(tmp_path / ".zymi" / "events.db")
    async with app.run_test(size=(120, 40)) as pilot:
        main = await settle(app, pilot)
        await pilot_until(pilot, lambda: main.knob_source == AGENT_CAPS, "the agent's caps named")
        plot = main.query_one(ContextPlot)
        assert (plot.soft_cap, plot.hard_cap) == (None, None)  # zymi's caps were not the agent's: none drawn


@requires_zymi
def test_a_call_whose_span_lacks_its_answer_takes_it_from_the_next_input(tmp_path: Path) -> None:
    """The first call's span carries no `gen_ai.output.messages`: its answer is the assistant message the
    next call's input holds after it; the last call's answer no span carries is counted, not made up."""
    chat = {"gen_ai.operation.name": "chat"}
    first = _span("1111111111111111", "aaaaaaaaaaaaaaaa", "chat m1", T0 + 1, {
        **chat, "gen_ai.input.messages": [SYSTEM, TASK],
    })  # fmt: skip
    second = _span("3333333333333333", "aaaaaaaaaaaaaaaa", "chat m1", T0 + 4_000_000, {
        **chat, "gen_ai.input.messages": [SYSTEM, TASK, CALL, RESULT],
    })  # fmt: skip
    root = _span("aaaaaaaaaaaaaaaa", None, "invoke_agent seller", T0, {"gen_ai.operation.name": "invoke_agent"})
    root["endTimeUnixNano"] = str(T0 + 9_000_000)
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(_request([first, second, root])))
    done = zymi_tui("import", str(path), "-d", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "1 answers not carried by any span" in done.stdout and "rewritten" not in done.stdout
    verify(tmp_path)
    answers = [e["kind"]["data"] for e in zymi_raw(tmp_path, "llm_call_completed")]
    assert answers[0]["response_message"]["Assistant"]["tool_calls"][0]["id"] == "c1"
    assert answers[1]["response_message"] is None
    results = [e["kind"]["data"] for e in zymi_raw(tmp_path, "tool_call_completed")]
    assert [(r["call_id"], r["result"]) for r in results] == [("c1", "3 pairs")]
    rows = replay(tmp_path)
    assert [r["chars"] for r in rows] == [r["recorded_chars"] for r in rows]


@requires_zymi
def test_the_lhar_json_wrapper_reads_as_the_lines_do(tmp_path: Path) -> None:
    reqs = [r for r in requests("coding_default") if r["kind"] == "agent"][:5]
    lines = [json.loads(line) for line in lhar_from(reqs, responses=True).splitlines()]
    sessions = [{k: v for k, v in line.items() if k != "type"} for line in lines if line["type"] == "session"]
    wrapper = {"lhar": {"version": "0.1", "creator": {"name": "test", "version": "0"}, "sessions": sessions,
                        "entries": [line for line in lines if line["type"] == "entry"]}}  # fmt: skip
    (tmp_path / "a.lhar").write_text(lhar_from(reqs, responses=True))
    (tmp_path / "b.lhar.json").write_text(json.dumps(wrapper))
    for name in ("a.lhar", "b.lhar.json"):
        assert zymi_tui("import", str(tmp_path / name), "-d", str(tmp_path / name.split(".")[0])).returncode == 0

    def figures(folder: Path) -> list[tuple[int, int]]:
        started = [e["kind"]["data"] for e in zymi_raw(folder, "llm_call_started")]
        return [(s["message_count"], s["approx_context_chars"]) for s in started]

    assert figures(tmp_path / "a") == figures(tmp_path / "b") != []


@requires_zymi
def test_an_agent_imported_into_a_zymi_project_folder_keeps_its_own_layer_a(tmp_path: Path) -> None:
    """The project describes its own pipelines, not the agent's: the agent's steps still replay from
    the Layer A and knobs they recorded (not an inferred prefix)."""
    import shutil

    project = tmp_path / "proj"
    shutil.copytree(ORACLE / "coding_default" / "project", project)
    reqs = [r for r in requests("coding_default") if r["kind"] == "agent"][:3]
    (tmp_path / "capture.lhar").write_text(lhar_from(reqs, responses=True))
    done = zymi_tui("import", str(tmp_path / "capture.lhar"), "-d", str(project))
    assert done.returncode == 0 and str((project / ".zymi" / "events.db").resolve()) in done.stdout
    rows = replay(project)
    assert [r["prefix_inferred"] for r in rows] == [False] * 3
    assert [r["chars"] for r in rows] == [r["recorded_chars"] for r in rows]
    assert {r["knobs_source"] for r in rows} == {"agent"}
