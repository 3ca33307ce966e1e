"""Properties of the ContextBuilder over generated step streams (hypothesis).

The reference is a plain from-scratch port of zymi's `events_to_messages`, `forget_old_turns` and
`mask_observations` (context_builder.rs / context_window.rs), written here independently of the
incremental builder; the incremental builder must agree with it at every call.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zymi_tui.context.builder import ContextBuilder
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.context.masking import mask_assistant, mask_tool_result, memory_text, message_bytes
from zymi_tui.context.rendered import COMPACTED_HEADER, Prefix
from zymi_tui.events.kinds import ContextCompacted, Event, LlmCallCompleted, ToolCallCompleted, UserMessageReceived
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolCallInfo,
    ToolResultMessage,
    UserMessage,
    to_wire,
)
from zymi_tui.events.replay_view import replay_event
from zymi_tui.events.stored import StoredEvent
from zymi_tui.events.timestamps import format_timestamp

STREAM = "run-1:step:work"
TOOLS = ["read_file", "execute_shell_command", "write_memory", "custom"]

# ---- generated streams ------------------------------------------------------------------------

texts = st.text(alphabet=st.sampled_from("ab xyzЖ🙂\n"), max_size=260)
turn = st.tuples(
    st.just("turn"),
    st.one_of(st.none(), texts),
    st.lists(st.tuples(st.sampled_from(TOOLS), texts, texts), max_size=3),
    st.booleans(),  # drop the last result (an incomplete turn)
)
user = st.tuples(st.just("user"), texts)
orphan = st.tuples(st.just("orphan"), texts)
compact = st.tuples(st.just("compact"), st.integers(0, 40), st.integers(0, 40), texts)
ops = st.lists(st.one_of(turn, turn, turn, user, orphan, compact), max_size=25)
knobs = st.builds(
    lambda w, soft, extra, tail, forget: ContextKnobs(
        observation_window=w, soft_cap_chars=soft, hard_cap_chars=soft + extra, min_tail_turns=tail,
        forget_after_turns=forget,
    ),
    st.integers(0, 6), st.integers(0, 3000), st.integers(0, 3000), st.integers(0, 5),
    st.one_of(st.none(), st.integers(0, 6)),
)  # fmt: skip


def _event(seq: int, kind: Any, source: str = "engine") -> StoredEvent:
    ev = Event(
        id=str(uuid.UUID(int=seq)),
        stream_id=STREAM,
        sequence=seq,
        timestamp=format_timestamp(1_800_000_000_000_000_000 + seq * 1000),
        kind=kind,
        source=source,
    )
    return StoredEvent(seq, ev, "")


def make_stream(plan: list[Any]) -> tuple[list[StoredEvent], list[int]]:
    """Events, and the indexes after which an LLM call happens."""
    events: list[StoredEvent] = []
    calls: list[int] = []
    n_call = 0
    for op in plan:
        seq = len(events) + 1
        if op[0] == "turn":
            _, content, tools, drop_last = op
            calls_info = tuple(
                ToolCallInfo(id=f"c{n_call}_{i}", name=name, arguments=f'{{"path": "{arg}", "command": "{arg}"}}')
                for i, (name, arg, _) in enumerate(tools)
            )
            n_call += 1
            msg = AssistantMessage(content=content, tool_calls=calls_info)
            events.append(_event(seq, LlmCallCompleted(response_message=msg, has_tool_calls=bool(calls_info))))
            results = list(zip(calls_info, tools, strict=True))
            if drop_last and results:
                results.pop()
            for call, (_, _, result) in results:
                kind = ToolCallCompleted(call_id=call.id, result=result, result_preview=result[:10], is_error=False,
                                         duration_ms=1)  # fmt: skip
                events.append(_event(len(events) + 1, kind))
        elif op[0] == "user":
            events.append(_event(seq, UserMessageReceived(content=UserMessage(content=op[1]), connector="t")))
        elif op[0] == "orphan":
            kind = ToolCallCompleted(call_id="zz", result=op[1], result_preview="", is_error=False, duration_ms=1)
            events.append(_event(seq, kind))
        else:
            _, a, b, summary = op
            lo, hi = sorted((a % seq + 1, b % seq + 1)) if seq > 1 else (1, 1)
            kind = ContextCompacted(replaces_seq_range=(lo, hi), summary=summary, bytes_saved=0)
            events.append(_event(seq, kind, "compaction"))
        calls.append(len(events))
    return events, calls


# ---- the reference: zymi's functions, from scratch --------------------------------------------


def ref_tail(events: list[StoredEvent]) -> list[MessageModel]:
    ranges = [k.replaces_seq_range for e in events if isinstance(k := e.event.kind, ContextCompacted)]
    summaries = sorted(
        ((k.replaces_seq_range[0], k.summary) for e in events if isinstance(k := e.event.kind, ContextCompacted)),
        key=lambda s: s[0],
    )
    out: list[MessageModel] = []
    nxt = 0
    for e in events:
        seq, kind = e.event.sequence, e.event.kind
        if any(lo <= seq <= hi for lo, hi in ranges):
            if nxt < len(summaries) and summaries[nxt][0] == seq:
                out.append(SystemMessage(content=COMPACTED_HEADER + summaries[nxt][1]))
                nxt += 1
            continue
        if isinstance(kind, LlmCallCompleted):
            assert kind.response_message is not None
            out.append(kind.response_message)
        elif isinstance(kind, ToolCallCompleted):
            out.append(ToolResultMessage(tool_call_id=kind.call_id, content=kind.result or kind.result_preview))
        elif isinstance(kind, UserMessageReceived):
            out.append(kind.content)
    return out


def segments(body: list[MessageModel]) -> list[tuple[bool, int, int]]:
    segs, i = [], 0
    while i < len(body):
        if isinstance(body[i], AssistantMessage):
            start = i
            i += 1
            while i < len(body) and isinstance(body[i], ToolResultMessage):
                i += 1
            segs.append((True, start, i))
        else:
            segs.append((False, i, i + 1))
            i += 1
    return segs


def ref_forget(body: list[MessageModel], keep: int) -> list[MessageModel]:
    segs = segments(body)
    turns = sum(1 for s in segs if s[0])
    if turns <= keep:
        return body
    drop, seen, until = turns - keep, 0, 0
    for is_turn, _, end in segs:
        if seen >= drop:
            break
        until = end
        seen += is_turn
    return body[until:]


def ref_mask(msgs: list[MessageModel], window: int) -> list[MessageModel]:
    pre = next((i for i, m in enumerate(msgs) if not isinstance(m, SystemMessage | UserMessage)), len(msgs))
    body = msgs[pre:]
    segs = segments(body)
    mask = max(0, sum(1 for s in segs if s[0]) - window)
    out, seen = list(msgs[:pre]), 0
    for is_turn, start, end in segs:
        part = body[start:end]
        if is_turn and seen < mask:
            head = part[0]
            assert isinstance(head, AssistantMessage)
            out.append(mask_assistant(head))
            out.extend(mask_tool_result(m, head) if isinstance(m, ToolResultMessage) else m for m in part[1:])
        else:
            out.extend(part)
        seen += is_turn
    return out


def ref_build(events: list[StoredEvent], k: ContextKnobs, prefix: Prefix, memory: list[tuple[str, str]]) -> Any:
    msgs: list[MessageModel] = [SystemMessage(content=prefix.system_prompt)]
    if prefix.task:
        msgs.append(UserMessage(content=prefix.task))
    if memory:
        msgs.append(SystemMessage(content=memory_text(memory)))
    tail = ref_tail(events)
    if k.forget_after_turns is not None:
        tail = ref_forget(tail, k.forget_after_turns)
    msgs.extend(ref_mask(tail, k.observation_window))
    return msgs, sum(message_bytes(m) for m in msgs)


PREFIX = Prefix("You are a test agent.", "Do the thing 🙂")
MEMORY = [("goal", "x" * 250), ("empty", "")]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(ops, knobs)
def test_incremental_equals_from_scratch_reference(plan: list[Any], k: ContextKnobs) -> None:
    events, calls = make_stream(plan)
    builder = ContextBuilder(k, PREFIX)
    fed = 0
    for upto in calls:
        while fed < upto:
            builder.add(replay_event(events[fed]))
            fed += 1
        ctx = builder.build(MEMORY)
        want, chars = ref_build(events[:upto], k, PREFIX, MEMORY)
        assert ctx.wire() == [to_wire(m) for m in want]
        assert (ctx.chars, ctx.message_count) == (chars, len(want))
        again = ContextBuilder(k, PREFIX)
        for e in events[:upto]:
            again.add(replay_event(e))
        assert again.build(MEMORY).wire() == ctx.wire()  # deterministic, and equal to a fresh builder


def _feed(builder: ContextBuilder, events: list[StoredEvent]) -> ContextBuilder:
    for e in events:
        builder.add(replay_event(e))
    return builder


@SETTINGS
@given(ops, knobs)
def test_structure_properties(plan: list[Any], k: ContextKnobs) -> None:
    events, _ = make_stream(plan)
    ctx = _feed(ContextBuilder(k, PREFIX), events).build(MEMORY)
    entries = ctx.entries
    # the total equals the sum of the parts
    assert ctx.chars == sum(e.bytes for e in entries) == sum(ctx.layer_bytes.values())
    assert ctx.message_count == len(entries)
    tail = [e for e in entries if e.layer == "C"]
    # forgetting keeps at most N turns
    if k.forget_after_turns is not None:
        assert sum(isinstance(e.message, AssistantMessage) for e in tail) <= k.forget_after_turns
    # a tool call and its results are never separated: a turn of the unforgotten tail is kept whole or not at all,
    # and its messages stay adjacent and in order
    kept = [e.source_seq for e in tail]
    full = _feed(ContextBuilder(k.replaced(forget_after_turns=None), PREFIX), events).build(MEMORY)
    full_tail = [e for e in full.entries if e.layer == "C"]
    for is_turn, start, end in segments([e.message for e in full_tail]):
        if is_turn:
            members = [full_tail[j].source_seq for j in range(start, end)]
            present = [m for m in members if m in kept]
            assert present in ([], members)
            if present:
                i = kept.index(members[0])
                assert kept[i : i + len(members)] == members
    # masking never grows an assistant message (its tool calls stay verbatim); a masked result is a placeholder
    # carrying the original size (it CAN be longer than a tiny result: see test_masking_can_grow_a_tiny_result)
    unmasked = _feed(ContextBuilder(k.replaced(observation_window=10**6), PREFIX), events).build(MEMORY)
    originals = {e.source_seq: e for e in unmasked.entries if e.layer == "C"}
    for e in tail:
        orig = originals[e.source_seq]
        if isinstance(e.message, AssistantMessage):
            assert isinstance(orig.message, AssistantMessage)
            assert e.bytes <= orig.bytes and e.message.tool_calls == orig.message.tool_calls
        elif e.message != orig.message:
            assert isinstance(e.message, ToolResultMessage) and e.message.content.startswith("[masked: ")
            assert e.message.content.endswith(f", {orig.bytes} chars]")


def test_masking_can_grow_a_tiny_result() -> None:
    """Recorded by the real engine (fresh_mode request 8): an 11-byte result becomes a 68-byte placeholder."""
    from tests.conftest import ORACLE

    path = ORACLE / "fresh_mode" / "requests.jsonl"
    import json

    body = json.loads(path.read_text().splitlines()[7])["body"]
    masked = [m["content"] for m in body["messages"] if m["role"] == "tool" and m["content"].startswith("[masked")]
    assert masked[0] == '[masked: execute_shell_command("echo smalltalk 1") → ok, 11 chars]'
    assert len(masked[0].encode()) > 11


# ---- a tail extended from another ---------------------------------------------------------------

item = st.tuples(st.sampled_from(["assistant", "tool", "user", "summary"]), texts)


def _raw(seq: int, kind: str, text: str) -> Any:
    from zymi_tui.context import layer_c as b

    call = ToolCallInfo(id=f"c{seq}", name="read_file", arguments="{}")
    made: dict[str, tuple[MessageModel, int]] = {
        "assistant": (AssistantMessage(content=text, tool_calls=(call,)), b.ASSISTANT),
        "tool": (ToolResultMessage(tool_call_id=f"c{seq - 1}", content=text), b.TOOL),
        "user": (UserMessage(content=text), b.OTHER),
        "summary": (UserMessage(content=COMPACTED_HEADER + text), b.OTHER),
    }
    message, code = made[kind]
    if kind == "summary":
        return b.NotedItem(seq, message, message_bytes(message), code, "summary")
    return b.Item(seq, message, message_bytes(message), code)


@given(st.lists(item, max_size=30), st.lists(item, max_size=6), st.data())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_a_tail_extended_from_another_equals_appending_its_items(
    base_items: list[tuple[str, str]], own_items: list[tuple[str, str]], data: st.DataObject
) -> None:
    """`Tail.extend` (what `ContextBuilder.follow` uses: running sums and turns copied from the base
    tail) leaves the tail exactly as appending the same items one by one, wherever the copied range
    starts (a tool result first, an open turn of its own, a summary inside)."""
    from zymi_tui.context.layer_c import Tail

    base = Tail()
    for seq, (kind, text) in enumerate(base_items):
        base.append(_raw(seq, kind, text))
    start = data.draw(st.integers(0, len(base_items)))
    end = data.draw(st.integers(start, len(base_items)))
    one_by_one, extended = Tail(), Tail()
    for seq, (kind, text) in enumerate(own_items):  # the same raws in both: a tail of its own first
        raw = _raw(1000 + seq, kind, text)
        one_by_one.append(raw)
        extended.append(raw)
    for i in range(start, end):
        one_by_one.append(base.items[i])
    extended.extend(base, start, end)
    for slot in Tail.__slots__:
        if slot != "items":
            assert getattr(extended, slot) == getattr(one_by_one, slot), slot
    # a tool result masked for another turn is copied by both ways (a build made then may still show
    # its old form): the items are compared by what they hold, each copy only where `append` copies
    assert [_fields(r) for r in extended.items] == [_fields(r) for r in one_by_one.items]
    assert [r is base.items[i] for i, r in enumerate(extended.items[len(own_items) :], start)] == [
        r is base.items[i] for i, r in enumerate(one_by_one.items[len(own_items) :], start)
    ]
    assert extended.head is one_by_one.head


def _fields(raw: Any) -> list[Any]:
    """An item's slots, the objects it points at (its message, the turn it is masked for) by identity."""
    from zymi_tui.context.layer_c import Item

    return [
        id(v) if slot in ("_message", "masked_for") and not isinstance(v, int) else v
        for slot in Item.__slots__
        for v in [getattr(raw, slot, None)]
    ]
