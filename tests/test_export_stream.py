"""Exports written as they are made: the OTLP/JSON text written span by span is what protobuf's own
JSON mapping (`json_format`, through `otlp_wire.otlp_json`) makes of the same spans, edge cases
included; a `--follow` export to a file has the spans of the calls so far in the file while it waits
for more (not in a buffer)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Sequence
from json.encoder import encode_basestring
from pathlib import Path

import pytest

from tests.conftest import ORACLE, copy_store, zymi_tui_bin
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolCallInfo,
    ToolResultMessage,
    to_wire,
)
from zymi_tui.telemetry.otel_content import as_json, genai_message, input_messages, message_texts
from zymi_tui.telemetry.otlp_lines import OtlpJsonLines
from zymi_tui.telemetry.otlp_wire import (
    CLIENT,
    INTERNAL,
    JsonArrayText,
    SpanData,
    export_request,
    make_span,
    otlp_json,
)

TRACE, SPAN, PARENT = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "00f067aa0ba902b7"
TEXTS = [
    "",
    "plain",
    'quote " back \\ slash / tab \t nl \n cr \r',
    "\x00\x01\x1f\x7f",
    "ünïcødé 漢字 😀",
    "\u2028\u2029",
]
TEXTS += ["".join(TEXTS) * 4, "a" * 65, "ü" * 65 + "\n"]  # longer than otlp_lines.INLINE_CHARS: written apart


def _spans() -> list[SpanData]:
    attrs: dict[str, object] = {f"s{i}": t for i, t in enumerate(TEXTS)}
    attrs |= {"yes": True, "no": False, "zero": 0, "neg": -7, "big": 2**62, "none": None}
    attrs |= {"f": 0.7, "f0": 0.0, "tiny": 1e-05, "huge": 1.5e300, "nan": float("nan"), "inf": float("inf")}
    attrs |= {"ninf": float("-inf"), "arr": ["a", 'b"', ""], "empty_arr": [], "joined": JsonArrayText([])}
    return [
        make_span(trace_id=TRACE, span_id=SPAN, parent_id=PARENT, name="chat m", kind=CLIENT, start_ns=1,
                  end_ns=2, attrs=attrs, error=None),  # type: ignore[arg-type]
        make_span(trace_id=TRACE, span_id=SPAN, parent_id=None, name="run", kind=INTERNAL, start_ns=5, end_ns=3,
                  attrs={}, error="it failed: \"quoted\"\n"),
        make_span(trace_id=TRACE, span_id=SPAN, parent_id="", name="", kind=INTERNAL, start_ns=0, end_ns=0,
                  attrs={"only_none": None}, error=""),
    ]  # fmt: skip


def _protobuf_lines(spans: Sequence[SpanData], size: int) -> str:
    resource = {"service.name": "zymi", "openinference.project.name": "zymi"}
    batches = [spans[i : i + size] for i in range(0, len(spans), size)]
    return "".join(
        json.dumps(otlp_json(export_request(b, resource)), ensure_ascii=False, separators=(",", ":")) + "\n"
        for b in batches
    )


class _Sink:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, s: bytes) -> int:
        self.parts.append(s)
        return len(s)

    def text(self) -> str:
        return b"".join(self.parts).decode()

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("size", [1, 2, 512])
def test_span_by_span_text_is_protobufs_json_mapping(size: int) -> None:
    spans = _spans() * 3
    sink = _Sink()
    lines = OtlpJsonLines(sink, {"service.name": "zymi", "openinference.project.name": "zymi"}, size)  # type: ignore[arg-type]
    for s in spans:
        lines.add([s])
    lines.flush()
    assert sink.text() == _protobuf_lines(spans, size)
    assert lines.spans == len(spans)


def test_input_messages_text_and_its_escaped_form() -> None:
    messages: list[MessageModel] = [
        SystemMessage(content=TEXTS[2]),
        AssistantMessage(content=None, tool_calls=(ToolCallInfo(id="c1", name="read", arguments='{"p": "ü\\n"}'),)),
        ToolResultMessage(tool_call_id="c1", content=TEXTS[3] + TEXTS[4]),
    ]
    text = input_messages([message_texts(m) for m in messages])
    assert text.text() == as_json([genai_message(to_wire(m)) for m in messages])
    assert b"".join(text.quoted_parts()).decode() == encode_basestring(text.text())


def _export(store: Path, *extra: str) -> list[str]:
    return [zymi_tui_bin(), "export", str(store), "--format", "otel", "--no-content", *extra]


def test_follow_to_a_file_has_the_spans_so_far_while_it_waits(tmp_path: Path) -> None:
    store = copy_store(ORACLE / "memory" / "events.db", tmp_path / "store")
    with sqlite3.connect(store) as con:  # a few calls' worth: less than a file buffer of spans
        con.execute("DELETE FROM events WHERE id > 12")
    whole = subprocess.run(_export(store), capture_output=True, text=True, timeout=120, check=True).stdout
    assert whole.count("\n") == 1 and len(whole.encode()) < 8192
    out = tmp_path / "spans.jsonl"
    proc = subprocess.Popen(_export(store, "--follow", "-o", str(out)), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out.exists() and out.read_text(encoding="utf-8").endswith("\n")):
            time.sleep(0.2)
        assert proc.poll() is None  # still following
        followed = out.read_text(encoding="utf-8")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    # the spans so far: those of the whole export but the steps and runs it closes at the store's end
    so_far, every = _span_list(followed), _span_list(whole)
    assert [str(s["name"]).split()[0] for s in so_far].count("chat") == 2
    assert so_far == every[: len(so_far)] and len(every) - len(so_far) == 2  # + the open step and run


def _span_list(text: str) -> list[dict[str, object]]:
    return [s for line in text.splitlines() for s in json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]]
