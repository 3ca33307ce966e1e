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
the message stays in its step's context and summed as the step's window moves (lhar_figures.py), the
rest of the body once per step (`BodyText`); lhar_entry.py writes the line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from zymi_tui.events.kinds import LlmCallStarted
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import STEP_MARK, step_of
from zymi_tui.replay.call_context import CallContext
from zymi_tui.telemetry.export_calls import Run, RunTracker, Step
from zymi_tui.telemetry.lhar_body import BodyFrames, BodyText, body_text
from zymi_tui.telemetry.lhar_entry import LharEntry, entry_line
from zymi_tui.telemetry.lhar_figures import Counted, Figures, ShownFigures, composition, counted, message_figures
from zymi_tui.telemetry.message_cache import MessageCache

MAIN, SUBAGENT, COMPACTION = "main", "subagent", "compaction"
COMPACTION_CALLS = "\x00compaction"  # a step stream's compaction calls' figures are kept apart from its agent's


@dataclass(frozen=True)
class ExportMeta:
    model: str
    provider: str  # gen_ai.system: "openai" | "anthropic" | ...
    window_tokens: int  # the context window the utilization is measured against


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
    # per step stream: its last agent call counted, not figured (`feed(quiet=True)`): `previous` once asked
    unfigured: dict[str, CallContext] = field(default_factory=dict)
    bodies: dict[tuple[str | None, str | None, bool], BodyText] = field(default_factory=dict)  # per step kind
    # per step stream: its last context's figures (`ShownFigures`; of its compaction calls, which have
    # no shape, by message: `MessageCache`), kept past the step's end (a chat stream's next turn goes on
    # with them), for the `OPEN_STREAMS` latest streams
    shown: ShownFigures = field(init=False)
    figures: MessageCache[Figures] = field(init=False)

    def __post_init__(self) -> None:
        self.shown = ShownFigures(wire=self.frames is not None)
        self.figures = MessageCache(partial(message_figures, wire=self.frames is not None))

    def holds_nothing_open(self) -> bool:
        """No run, step or call is open: the entries of the events after this are what a new builder
        makes of them when no conversation has events on both sides (the rest is kept by step stream or
        by conversation, or is a cache). A store so cut is exported in parts (commands/lhar_pair.py)."""
        t = self.tracker
        return not (self.calls or t.runs or t.steps)

    def feed(self, se: ReplayEvent | None, rows: list[CallContext], *, quiet: bool = False) -> list[LharEntry]:
        """`quiet`: the entries are counted, not made (another process makes them: `later_from`)."""
        if se is not None:
            if isinstance(se.kind, LlmCallStarted) and STEP_MARK in se.stream_id:
                self.calls[(se.stream_id, se.sequence)] = self.tracker.step_of(se)
            ended = self.tracker.feed(se)
            if ended is not None and ended.step is not None:
                self.previous.pop(ended.step.stream, None)
                self.unfigured.pop(ended.step.stream, None)
                self.compacted.discard(ended.step.stream)
        out = []
        for row in rows:
            step = None if row.hard_cap_failure else self.calls.pop((row.stream_id, row.sequence), None)
            if step is not None and row.rendered is not None and not row.simulated:
                if quiet:
                    self._passed(row, step, None)
                else:
                    out.append(self._entry(row, step))
        return out

    def _passed(self, r: CallContext, step: Step, total: int | None) -> tuple[int, bool, int | None]:
        """What an entry of `total` tokens (None: counted, not made: figured when asked, `later_from`)
        leaves for the next ones; its number in its conversation, whether a compaction had just shrunk
        its context, and the tokens of its step's previous agent call."""
        conversation = step.run.stream
        seq = self.sequence[conversation] = self.sequence.get(conversation, 0) + 1
        if r.is_compaction:
            self.compacted.add(r.stream_id)
            return seq, False, None
        detected = r.stream_id in self.compacted
        self.compacted.discard(r.stream_id)
        if total is None:
            self.previous.pop(r.stream_id, None)
            self.unfigured[r.stream_id] = r
            return seq, detected, None
        prev = self.previous.get(r.stream_id)
        self.previous[r.stream_id] = total
        return seq, detected, prev

    def later_from(self) -> None:
        """The entries from now on are made (`feed` was `quiet` so far): each step's last agent call's
        tokens figured (`previous`), as its own entry would have figured them."""
        for stream, r in self.unfigured.items():
            self.previous[stream] = self._figured(r)[3]
        self.unfigured.clear()

    def _body(self, r: CallContext) -> BodyText:
        """The body's text but for its messages: the same for each call of a step (`BodyFrames`'s arguments)."""
        key = (r.pipeline, step_of(r.stream_id), r.is_compaction)
        body = self.bodies.get(key)
        if body is None:
            body = self.bodies[key] = body_text(self.frames(*key) if self.frames else None, self.meta.model)
        return body

    def _figured(self, r: CallContext) -> tuple[Counted, BodyText, tuple[str, dict[str, int], str], int]:
        """A call's figures, its body's text, its composition (`composition`) and its tokens."""
        assert r.rendered is not None
        shape = r.rendered.shape
        key = f"{r.stream_id}{COMPACTION_CALLS}" if r.is_compaction else r.stream_id
        if shape is not None:
            figured = self.shown.figures(key, shape)
        else:
            entries = r.rendered.entries
            figures = self.figures.values(key, [e.message for e in entries])
            figured = counted(entries, figures, wire=self.frames is not None)
        body = self._body(r)
        comp = composition(figured, body)
        return figured, body, comp, sum(comp[1].values())

    def _entry(self, r: CallContext, step: Step) -> LharEntry:
        figured, body, comp, total = self._figured(r)
        seq, detected, prev = self._passed(r, step, total)
        role, meta = agent_role(r, step.run), self.meta
        wires = figured.wires if body.head is not None else None
        return entry_line(r, step, role, seq, meta.provider, meta.window_tokens, body, comp,
                          (None if prev is None else total - prev, detected), wires)  # fmt: skip
