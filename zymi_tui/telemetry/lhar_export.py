"""A store's LLM calls as LHAR (LLM HTTP Archive), the JSON Lines context-lens reads.

context-lens reads one session per file (`readLharFile` keeps the last `session` line it meets), so
a session is written to a file of its own: one session per conversation (a run stream: a
`zymi run`'s run, or a chat stream's turns). Entries are the calls the model received, in store
order, each with the exact request body when the project is known (`BodyFrames`). `source.agent_role`
is `main` for the calls of a run's steps, `subagent` for a nested run's or step's, `compaction` for
the summariser's calls; `growth.compaction_detected` marks the agent call whose context a
compaction had just shrunk (context-lens compares it with the same role's earlier calls). Figures
are the store's recorded usage; what the store does not hold (latencies of HTTP phases, headers,
response bodies) is null or empty.

An entry's line is made as it comes and handed on (`LharEntry`): its text is assembled from parts,
each message's (its token count, its tool calls' JSON, its JSON in the request body) made once while
the message stays in its step's context (`MessageCache`), the rest of the body once per step
(`BodyText`); lhar_entry.py writes the line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from zymi_tui.context.rendered import ContextEntry
from zymi_tui.context.tokens import estimate_message_tokens
from zymi_tui.events.json_text import json_text
from zymi_tui.events.kinds import LlmCallStarted
from zymi_tui.events.messages import (
    AssistantMessage,
    MessageModel,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
    to_wire,
)
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK, step_of
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.export_calls import Run, RunTracker, Step
from zymi_tui.telemetry.lhar_body import BodyFrames, BodyText, body_text
from zymi_tui.telemetry.lhar_entry import LharEntry, entry_line
from zymi_tui.telemetry.lhar_text import items_text, value_text
from zymi_tui.telemetry.message_cache import MessageCache

COMPOSITION = (
    "system_prompt", "tool_definitions", "system_injections", "user_text", "assistant_text", "tool_calls",
    "tool_results",
)  # fmt: skip
MAIN, SUBAGENT, COMPACTION = "main", "subagent", "compaction"
COMPACTION_CALLS = "\x00compaction"  # a step stream's compaction calls' figures are kept apart from its agent's


@dataclass(frozen=True)
class ExportMeta:
    model: str
    provider: str  # gen_ai.system: "openai" | "anthropic" | ...
    window_tokens: int  # the context window the utilization is measured against


def message_category(m: MessageModel) -> str:
    """The composition category of a message anywhere but first in Layer A (the system prompt)."""
    if isinstance(m, SystemMessage):
        return "system_injections"
    if isinstance(m, UserMessage) or m.role == "user_multimodal":
        return "user_text"
    if isinstance(m, ToolResultMessage):
        return "tool_results"
    if isinstance(m, AssistantMessage) and m.tool_calls and not m.content:
        return "tool_calls"
    return "assistant_text"


def message_tool_calls(message: MessageModel) -> list[dict[str, Any]]:
    """context-lens's `tool_calls` items of one message (an assistant message's calls)."""
    calls: list[dict[str, Any]] = []
    if isinstance(message, AssistantMessage):
        for c in message.tool_calls:
            try:
                args: Any = json.loads(c.arguments)
            except ValueError:
                args = c.arguments
            calls.append(
                {"name": c.name, "call_id": c.id, "arguments": args if isinstance(args, dict | str) else c.arguments}
            )
    return calls


class Figures(NamedTuple):
    """What an entry needs of its message, made once per message of a step (`MessageCache`)."""

    tokens: int  # estimated (the tokenizer of the context figures)
    category: str  # `message_category`
    tool_calls: str  # its `message_tool_calls` as the items of a JSON list ("" for none)
    wire: bytes  # its OpenAI wire form's JSON, UTF-8 (b"" when no request body is written)


def message_figures(message: MessageModel, *, wire: bool = False) -> Figures:
    calls = message_tool_calls(message)
    return Figures(
        estimate_message_tokens(message),
        message_category(message),
        items_text(calls) if calls else "",
        json_text(to_wire(message)).encode() if wire else b"",
    )


def composition(
    entries: Sequence[ContextEntry], figures: Sequence[Figures], body: BodyText
) -> tuple[str, dict[str, int], str]:
    """The context by category (context-lens's composition, the items of its JSON list), tool
    definitions included, the tokens of each category, and the tool calls of its messages (the items of
    a JSON list). Tokens are estimates: each message's from its `figures`; a simulated entry, or an
    inferred Layer A one, is sized from its bytes (`ContextEntry.tokens`); the first entry of Layer A,
    a system message, is the system prompt."""
    tokens: dict[str, int] = dict.fromkeys(COMPOSITION, 0)
    counts: dict[str, int] = dict.fromkeys(COMPOSITION, 0)
    calls: list[str] = []
    first = True
    for e, f in zip(entries, figures, strict=True):
        n = e.tokens if e.simulated or (e.layer == "A" and e.reason.startswith("inferred")) else f.tokens
        cat = f.category
        if first:
            first = False
            if e.layer == "A" and isinstance(e.message, SystemMessage):
                cat = "system_prompt"
        tokens[cat] += n
        counts[cat] += 1
        if f.tool_calls:
            calls.append(f.tool_calls)
    if body.tools_count:
        tokens["tool_definitions"], counts["tool_definitions"] = body.tools_tokens, body.tools_count
    total = sum(tokens.values()) or 1
    comp = ", ".join(
        f'{{"category": "{c}", "tokens": {tokens[c]}, "pct": {value_text(round(100 * tokens[c] / total, 2))}, '
        f'"count": {counts[c]}}}'
        for c in COMPOSITION
        if counts[c]
    )
    return comp, tokens, ", ".join(calls)


def agent_role(row: CallContext, run: Run) -> str:
    if row.is_compaction:
        return COMPACTION
    return SUBAGENT if run.nested or row.stream_id.count(STEP_MARK) > 1 else MAIN


@dataclass
class LharBuilder:
    """`feed` every event in global order with the rows it completed; each returns the entries they
    make (`LharEntry`: the conversation an entry belongs to, its timestamp, its line)."""

    meta: ExportMeta
    frames: BodyFrames | None  # a call's request body without its messages (None: no bodies)
    tracker: RunTracker = field(default_factory=RunTracker)
    calls: dict[tuple[str, int], Step] = field(default_factory=dict)  # started, awaiting their row
    sequence: dict[str, int] = field(default_factory=dict)  # per conversation: entries so far
    previous: dict[str, int] = field(default_factory=dict)  # per step stream: the last agent call's tokens
    compacted: set[str] = field(default_factory=set)  # step streams whose last call was a compaction
    bodies: dict[tuple[str | None, str | None, bool], BodyText] = field(default_factory=dict)  # per step kind
    # per step stream (its compaction calls apart): its last context's messages' figures, kept past the
    # step's end (a chat stream's next turn goes on with them), for the `OPEN_STREAMS` latest streams
    figures: MessageCache[Figures] = field(init=False)

    def __post_init__(self) -> None:
        self.figures = MessageCache(partial(message_figures, wire=self.frames is not None))

    def feed(self, se: ReplayEvent | None, rows: list[CallContext]) -> list[LharEntry]:
        if se is not None:
            if isinstance(se.kind, LlmCallStarted) and STEP_MARK in se.stream_id:
                self.calls[(se.stream_id, se.sequence)] = self.tracker.step_of(se)
            ended = self.tracker.feed(se)
            if ended is not None and ended.step is not None:
                self.previous.pop(ended.step.stream, None)
                self.compacted.discard(ended.step.stream)
        out = []
        for row in rows:
            step = None if row.hard_cap_failure else self.calls.pop((row.stream_id, row.sequence), None)
            if step is not None and row.rendered is not None and not row.simulated:
                out.append(self._entry(row, step))
        return out

    def _body(self, r: CallContext) -> BodyText:
        """The body's text but for its messages: the same for each call of a step (`BodyFrames`'s arguments)."""
        key = (r.pipeline, step_of(r.stream_id), r.is_compaction)
        body = self.bodies.get(key)
        if body is None:
            body = self.bodies[key] = body_text(self.frames(*key) if self.frames else None, self.meta.model)
        return body

    def _entry(self, r: CallContext, step: Step) -> LharEntry:
        assert r.rendered is not None
        entries = r.rendered.entries
        key = f"{r.stream_id}{COMPACTION_CALLS}" if r.is_compaction else r.stream_id
        figures = self.figures.values(key, [e.message for e in entries])
        body = self._body(r)
        comp, tokens, tool_calls = composition(entries, figures, body)
        total = sum(tokens.values())
        detected = False
        if r.is_compaction:
            self.compacted.add(r.stream_id)
        else:
            detected = r.stream_id in self.compacted
            self.compacted.discard(r.stream_id)
        prev = None if r.is_compaction else self.previous.get(r.stream_id)
        if not r.is_compaction:
            self.previous[r.stream_id] = total
        conversation = step.run.stream
        seq = self.sequence[conversation] = self.sequence.get(conversation, 0) + 1
        role, meta = agent_role(r, step.run), self.meta
        wires = [f.wire for f in figures] if body.head is not None else None
        return entry_line(r, step, role, seq, meta.provider, meta.window_tokens, body, (comp, tokens, tool_calls),
                          (None if prev is None else total - prev, detected), wires)  # fmt: skip
