"""What an export walks: a store's events in global order, each followed by the replayed LLM calls it
completed, and which run (trace) and step every event belongs to.

A run is a `PipelineRequested` on a run stream and its correlation id (a chat turn is a run); its
steps are the step streams its `WorkflowNodeStarted` events open. An event on a step stream belongs
to the run that last opened that step, whatever its own correlation id says: zymi gives each
compaction call a correlation id of its own, yet it is made inside the step's run. Only open runs
and steps are held, so memory follows what is running, not the store's size.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from zymi_tui.context.event_items import fast_ts_ns
from zymi_tui.events.kinds import (
    PipelineCompleted,
    PipelineRequested,
    UserMessageReceived,
    WorkflowNodeCompleted,
    WorkflowNodeStarted,
)
from zymi_tui.events.replay_view import ReplayEvent, replay_event
from zymi_tui.events.store import STEP_MARK, EventReader, run_of
from zymi_tui.events.tail import tail
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.event_pages import replay_events
from zymi_tui.replay.store_ends import StreamEnds, ends_top, run_closings, stream_ends
from zymi_tui.replay.store_replay import make_replayer, store_texts

AGENT = re.compile(r"^agent=([^,]+)")  # zymi's WorkflowNodeStarted description: `agent=coder, task="..."`


def hex_id(text: str, n: int) -> str:
    """A stable id of `n` hex digits (trace ids 32, span ids 16): the same store exports the same ids."""
    return hashlib.sha256(text.encode()).hexdigest()[:n]


@dataclass
class Run:
    """One run: the root of its trace."""

    stream: str  # the run stream: the conversation (`gen_ai.conversation.id`)
    correlation_id: str
    pipeline: str | None
    start_ns: int
    end_ns: int
    nested: bool = False  # a pipeline started from inside another run's step
    user_message: str | None = None

    @cached_property
    def trace_id(self) -> str:  # stream and correlation id never change once the run is made
        return hex_id(f"{self.stream}|{self.correlation_id}", 32)

    @cached_property
    def span_id(self) -> str:
        return hex_id(f"run|{self.stream}|{self.correlation_id}", 16)


@dataclass
class Step:
    """One step of a run: the agent its calls are made by."""

    run: Run
    stream: str  # the step stream
    node_id: str
    agent: str
    start_ns: int
    end_ns: int

    @cached_property
    def span_id(self) -> str:  # its run, stream and start never change once the step is made
        return hex_id(f"step|{self.stream}|{self.run.correlation_id}|{self.start_ns}", 16)


@dataclass(frozen=True)
class Ended:
    """What an event closed: a step (`step`) or a run (`run`), with its outcome."""

    run: Run | None = None
    step: Step | None = None
    ok: bool = True
    error: str | None = None


class RunTracker:
    """The open runs and steps, fed every event in global order (`feed`)."""

    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}  # run stream -> its open run
        self.steps: dict[str, Step] = {}  # step stream -> its open step

    def run_of(self, se: ReplayEvent) -> Run:
        """The run an event belongs to (a run is made up for a stream with no `PipelineRequested`)."""
        if STEP_MARK in se.stream_id:
            step = self.steps.get(se.stream_id)
            if step is not None:
                return step.run
        stream = run_of(se.stream_id)
        run = self.runs.get(stream)
        if run is None:
            ts = fast_ts_ns(se.timestamp)
            run = self.runs[stream] = Run(stream, se.correlation_id or stream, None, ts, ts)
        return run

    def step_of(self, se: ReplayEvent) -> Step:
        """The step a step-stream event belongs to (made up if no `WorkflowNodeStarted` opened it)."""
        step = self.steps.get(se.stream_id)
        if step is None:
            node = se.stream_id.split(STEP_MARK, 1)[1]
            ts = fast_ts_ns(se.timestamp)
            step = self.steps[se.stream_id] = Step(self.run_of(se), se.stream_id, node, node, ts, ts)
        return step

    def feed(self, se: ReplayEvent, ts: int | None = None) -> Ended | None:
        """`ts`: the event's time in ns, when the caller has it already (`fast_ts_ns(se.timestamp)`)."""
        kind = se.kind
        if ts is None:
            ts = fast_ts_ns(se.timestamp)
        if STEP_MARK in se.stream_id:
            step = self.steps.get(se.stream_id)
            if step is not None:
                step.end_ns = max(step.end_ns, ts)
                step.run.end_ns = max(step.run.end_ns, ts)
            return None
        if isinstance(kind, PipelineRequested):
            corr = se.correlation_id or se.stream_id
            # a pipeline requested from inside another open run (its correlation id) is nested in it
            nested = any(r.correlation_id == corr and r.stream != se.stream_id for r in self.runs.values())
            self.runs[se.stream_id] = Run(se.stream_id, corr, kind.pipeline, ts, ts, nested=nested)
            return None
        run = self.run_of(se)
        run.end_ns = max(run.end_ns, ts)
        if isinstance(kind, UserMessageReceived):
            content = getattr(kind.content, "content", None)
            run.user_message = content if isinstance(content, str) else None
        elif isinstance(kind, WorkflowNodeStarted):
            m = AGENT.match(kind.description)
            stream = f"{se.stream_id}{STEP_MARK}{kind.node_id}"
            self.steps[stream] = Step(run, stream, kind.node_id, m[1] if m else kind.node_id, ts, ts)
        elif isinstance(kind, WorkflowNodeCompleted):
            step = self.steps.pop(f"{se.stream_id}{STEP_MARK}{kind.node_id}", None)
            if step is not None:
                step.end_ns = max(step.end_ns, ts)
                return Ended(step=step, ok=kind.success)
        elif isinstance(kind, PipelineCompleted):
            self.runs.pop(se.stream_id, None)
            for stream in [s for s, st in self.steps.items() if st.run is run]:
                del self.steps[stream]
            return Ended(run=run, ok=kind.success, error=kind.error)
        return None

    def still_open(self) -> tuple[list[Step], list[Run]]:
        """The steps and runs no event closed (a run cut short, or still running)."""
        return list(self.steps.values()), list(self.runs.values())


@dataclass(frozen=True)
class HandOver:
    """The store after global id `after` is exported by another process, if this walk holds nothing
    open there: `take()` is asked at the first event past `after` once the replayer holds no run, step
    or row (its caller's own state checked, the other process's output ready); True ends the walk
    there, with no last `(None, rows)`."""

    after: int
    take: Callable[[], bool]


async def walk(
    reader: EventReader,
    project: Path | None,
    streams: Sequence[str] | None = None,
    *,
    reuse: bool = True,
    after: int = 0,
    until: int | None = None,
    hand_over: HandOver | None = None,
    ends: dict[str, int] | StreamEnds | None = None,
) -> AsyncIterator[tuple[ReplayEvent | None, list[CallContext]]]:
    """Every event the replay reads, in global order, with the recorded calls it completed (replayed
    under the recorded knobs: their rebuilt context); last `(None, rows)` with the calls left open.
    `reuse=False`: the rows' prefix reuse is not worked out (`CallContext.reuse` stays None); else its
    figures are, not what broke it (no export reads `PrefixReuse.broken`'s cause).
    `after`, `until`: only the events with global ids in (after, until] (without `streams`; until=None:
    the store's last when the walk begins). `hand_over`: see `HandOver`. `ends`: each stream's last
    global id (`stream_ends`), when the caller has read them, or `StreamEnds` (read as they are asked)."""
    replayer = make_replayer(project, texts=store_texts(reader))
    replayer.track_reuse, replayer.name_reuse = reuse, False
    if ends is None:
        ends = await stream_ends(reader)
    replayer.forget_finished(ends, await run_closings(reader))
    top = ends_top(ends) if until is None else until
    wanted = set(streams) if streams else None
    async with aclosing(replay_events(reader, streams, after=after)) as events:
        async for se in events:
            if se.global_id > top:
                break
            if hand_over is not None and se.global_id > hand_over.after:
                if replayer.idle_before(se) and not replayer.runs and hand_over.take():
                    return
                hand_over = None
            replayer.feed(se)
            yield se, [r for r in replayer.ready() if wanted is None or r.stream_id in wanted]
    yield None, [r for r in replayer.flush() if wanted is None or r.stream_id in wanted]


async def follow(
    reader: EventReader, project: Path | None, *, on_idle: Callable[[], None], poll_s: float = 0.5
) -> AsyncIterator[tuple[ReplayEvent | None, list[CallContext]]]:
    """`walk`, then every event written after, as it is written (never ends: the caller stops it);
    `on_idle` is called once the events written so far are out (after the store, after each batch).
    The step builders are kept (a chat stream's next turn goes on from them)."""
    replayer = make_replayer(project)
    replayer.name_reuse = False  # (as `walk`)
    top = max((await stream_ends(reader)).values(), default=0)
    async with aclosing(replay_events(reader, None)) as events:
        async for se in events:
            if se.global_id > top:
                break
            replayer.feed(se)
            yield se, replayer.ready()
    on_idle()
    async for batch in tail(reader, top, poll_s=poll_s):
        for stored in batch:
            se = replay_event(stored)
            if se.kind is None:
                continue
            replayer.feed(se)
            yield se, replayer.ready()
        on_idle()
