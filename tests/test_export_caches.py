"""What the exports keep from one call to the next cannot serve a stale value: the per-step message
cache (telemetry/message_cache.py) knows messages by value, so two messages of equal length but other
text, or a message masked between two calls, get their own values; and the message texts written
directly (`message_json`, `output_json`) are the generic path's (`genai_message` of the wire form,
through `json.dumps`), character for character, on text that needs escaping; LHAR's ids and
timestamps are the standard library's (`uuid.UUID`, `datetime.strftime`), the second's text kept;
the OTLP writer's kept key-values are protobuf's JSON mapping of the value at hand; a file export
loads neither httpx nor the protobuf classes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE
from tests.test_export_stream import SPAN, TRACE, _protobuf_lines, _Sink
from zymi_tui.events.messages import (
    AssistantMessage,
    ImagePart,
    MessageModel,
    SystemMessage,
    TextPart,
    ToolCallInfo,
    ToolResultMessage,
    UserMessage,
    UserMultimodalMessage,
    to_wire,
)
from zymi_tui.telemetry.lhar_figures import message_figures
from zymi_tui.telemetry.lhar_text import iso, uuid_text
from zymi_tui.telemetry.message_cache import MessageCache
from zymi_tui.telemetry.otel_content import genai_message, input_messages, message_json, message_texts, output_json
from zymi_tui.telemetry.otel_spans import TraceBuilder, TraceOptions
from zymi_tui.telemetry.otlp_lines import OtlpJsonLines
from zymi_tui.telemetry.otlp_wire import CLIENT, INTERNAL, make_span


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cache() -> tuple[MessageCache[str], list[MessageModel]]:
    made: list[MessageModel] = []

    def make(m: MessageModel) -> str:
        made.append(m)
        return message_json(m)

    return MessageCache(make), made


def test_equal_length_other_text_gets_its_own_value() -> None:
    cache, _ = _cache()
    a, b = ToolResultMessage(tool_call_id="c1", content="aaaa"), ToolResultMessage(tool_call_id="c1", content="bbbb")
    first = cache.values("s", [SystemMessage(content="p"), a])
    second = cache.values("s", [SystemMessage(content="p"), b])  # same length, same place, other text
    assert first[1] == message_json(a) and second[1] == message_json(b) != first[1]


def test_a_message_masked_between_calls_is_made_again() -> None:
    cache, made = _cache()
    user = UserMessage(content="task")
    full = ToolResultMessage(tool_call_id="c1", content="x" * 500)
    masked = ToolResultMessage(tool_call_id="c1", content="[masked: 500 bytes]")
    answer = AssistantMessage(content="done")
    cache.values("s", [user, full])
    got = cache.values("s", [user, masked, answer])  # the list grew, but its second message changed
    assert got == [message_json(user), message_json(masked), message_json(answer)]
    assert made == [user, full, masked, answer]


def test_a_grown_list_reuses_its_prefix_and_equal_messages_made_anew() -> None:
    cache, made = _cache()
    msgs: list[MessageModel] = [SystemMessage(content="prompt"), UserMessage(content="task")]
    cache.values("s", msgs)
    more: list[MessageModel] = [
        SystemMessage(content="prompt"),
        UserMessage(content="task"),
        AssistantMessage(content="hi"),
    ]
    assert cache.values("s", more) == [message_json(m) for m in more]  # equal values, other objects
    assert made == [*msgs, more[2]]
    assert cache.values("t", more) == [message_json(m) for m in more]  # another step: its own list
    assert len(made) == 6


def test_figures_cache_counts_equal_length_texts_apart() -> None:
    cache = MessageCache(message_figures)
    calls = (ToolCallInfo(id="1", name="ls", arguments='{"p": "a"}'),)
    one = cache.values("s", [AssistantMessage(content=None, tool_calls=calls)])
    other = (ToolCallInfo(id="1", name="ls", arguments='{"p": "b"}'),)
    two = cache.values("s", [AssistantMessage(content=None, tool_calls=other)])
    assert json.loads(f"[{one[0].tool_calls}]")[0]["arguments"] == {"p": "a"}
    assert json.loads(f"[{two[0].tool_calls}]")[0]["arguments"] == {"p": "b"}


NUMBERS = '{"x": 1.0e16, "y": [NaN, -0.0, 1e-7, 12345678901234567890123]}'  # floats, a big int
TEXTS = ["", "a", 'é\n\t"\\', "\x00\x1f\x7f", "\u2028\u2029", "𝄞", NUMBERS, "not json", "[1, 2]", '"s"', "null"]


def _messages(a: str, b: str) -> list[MessageModel]:
    return [
        SystemMessage(content=a),
        UserMessage(content=a),
        ToolResultMessage(tool_call_id=a, content=b),
        AssistantMessage(content=a),
        AssistantMessage(content=None, tool_calls=(ToolCallInfo(id=a, name=b, arguments=b),)),
        AssistantMessage(
            content=a, tool_calls=(ToolCallInfo(id=a, name=b, arguments=a), ToolCallInfo(id=b, name=a, arguments=b))
        ),
        UserMultimodalMessage(parts=(TextPart(text=a), ImagePart(media_type="image/png", data="x"), TextPart(text=b))),
    ]


@pytest.mark.parametrize("a", TEXTS)
def test_message_json_is_the_generic_paths_text(a: str) -> None:
    for b in TEXTS:
        for m in _messages(a, b):
            generic = _dumps(genai_message(to_wire(m)))
            assert message_json(m) == generic
            assert message_texts(m) == (generic, json.dumps(generic, ensure_ascii=False)[1:-1].encode())
            for reason in (None, "", "stop", "length\n"):
                out = genai_message(to_wire(m))
                auto = "tool_call" if isinstance(m, AssistantMessage) and m.tool_calls else "stop"
                out["finish_reason"] = reason or auto
                assert output_json(m, reason) == _dumps([out])
    assert output_json(None, "stop") is None


def test_uuid_and_timestamp_texts_are_the_standard_librarys() -> None:
    for i in range(300):
        h = hashlib.sha256(str(i).encode()).hexdigest()[:32]
        assert uuid_text(h) == str(uuid.UUID(h))
    second = 1_733_500_000 * 1_000_000_000
    for ns in (0, 1, 999_999_999, second + 123_456_789, second + 999_999_999, second + 1_000_000_000, second + 5):
        dt = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC)
        assert iso(ns) == dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 1_000_000_000 // 1_000_000:03d}Z"
    assert iso(None) == ""


def test_kept_key_values_never_answer_for_another_value() -> None:
    """The OTLP writer keeps repeating texts (stream ids, ...) and flags as whole key-values: a key seen
    with one value, then another of the same length, a flag, the text of a flag, a long text, a joined
    context, is written as protobuf's JSON mapping writes it."""
    joined = input_messages([message_texts(UserMessage(content='é"\n')), message_texts(AssistantMessage(content=None))])
    values: list[object] = ["aaaa", "bbbb", True, "True", False, "", "x" * 200, "aaaa", 1, "1", "é" * 80, joined]
    spans = [
        make_span(trace_id=TRACE, span_id=SPAN, parent_id=None, name="s", kind=INTERNAL, start_ns=1, end_ns=2,
                  attrs={"k": v, "zymi.stream_id": v}, error=None)  # type: ignore[dict-item]
        for v in values
    ]  # fmt: skip
    sink = _Sink()
    lines = OtlpJsonLines(sink, {"service.name": "zymi", "openinference.project.name": "zymi"}, 4)  # type: ignore[arg-type]
    lines.add(spans)
    lines.flush()
    assert sink.text() == _protobuf_lines(spans, 4)


def test_span_kinds_are_protobufs() -> None:
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    assert (INTERNAL, CLIENT) == (Span.SpanKind.SPAN_KIND_INTERNAL, Span.SpanKind.SPAN_KIND_CLIENT)


LOADED = """
import sys
from zymi_tui.cli import main
db, otel, lhar = sys.argv[1:]
for fmt, out in (("otel", otel), ("lhar", lhar + "/")):
    assert main(["export", db, "--format", fmt, "-o", out]) == 0
print(",".join(m for m in ("httpx", "google.protobuf", "opentelemetry.proto") if m in sys.modules))
"""


def test_a_file_export_loads_neither_httpx_nor_protobuf(tmp_path: Path) -> None:
    """Start-up is part of the floor at 100k events: the push's client and the protobuf classes load
    only when spans are pushed."""
    db = ORACLE / "coding_default" / "events.db"
    proc = subprocess.run([sys.executable, "-c", LOADED, str(db), str(tmp_path / "o.jsonl"), str(tmp_path / "l")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
    assert (tmp_path / "o.jsonl").stat().st_size > 0 and any((tmp_path / "l").iterdir())


def test_system_instructions_kept_only_for_the_same_prompt() -> None:
    builder = TraceBuilder(TraceOptions(model="m", provider="openai"), lambda row: None)
    for text in ("aaaa", "bbbb", "aaaa", "", 'é"\n'):
        expected = _dumps([{"type": "text", "content": text}]) if text else None
        assert builder.rows._instructions(SystemMessage(content=text)) == expected


def test_an_export_without_a_project_loads_no_engine(tmp_path: Path) -> None:
    """Without a project no request body is made: the engine (its loader, tools and providers, with
    asyncio's ssl beneath them) is not loaded."""
    db = tmp_path / "alone" / "events.db"
    db.parent.mkdir()
    db.write_bytes((ORACLE / "coding_default" / "events.db").read_bytes())
    script = LOADED.replace('("httpx", "google.protobuf", "opentelemetry.proto")', "sorted(sys.modules)").replace(
        "if m in sys.modules", "if m.startswith('zymi_tui.engine.') and m != 'zymi_tui.engine.bodies'"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(db), str(tmp_path / "o.jsonl"), str(tmp_path / "l")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_kept_key_values_stay_few_over_many_runs() -> None:
    """A store of many runs names a new stream in every run: the texts kept as whole key-values must
    not grow with the store (at 1M events of many runs they held ~10 MB, most of the peak's growth)."""
    from zymi_tui.telemetry import otlp_lines

    otlp_lines._PAIRS.clear()
    sink = _Sink()
    lines = OtlpJsonLines(sink, {"service.name": "zymi"}, 512)  # type: ignore[arg-type]
    for run in range(6000):
        lines.add(
            [
                make_span(trace_id=TRACE, span_id=SPAN, parent_id=None, name="s", kind=INTERNAL, start_ns=1,
                          end_ns=2, attrs={"zymi.stream_id": f"run-{run}:step:{run}"}, error=None)
            ]
        )  # fmt: skip
    lines.flush()
    assert len(otlp_lines._PAIRS) <= 2048
    assert sink.text().count('"run-5999:step:5999"') == 1
