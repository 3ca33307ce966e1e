"""Replaying a store: its rows paged in global order (event_pages.py) through one or several replayers (several knob
sets in one pass, grouped while they agree), and the context of one call or of a call and the one before."""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from zymi_tui.context.event_items import Converted
from zymi_tui.context.knobs import ContextKnobs, project_knobs
from zymi_tui.context.layer_c import TextSource
from zymi_tui.context.prefix import ProjectPrefixes
from zymi_tui.context.texts import StoreTexts
from zymi_tui.events.kinds import (
    WorkflowNodeStarted,
)
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import (
    STEP_MARK,
    BlockingRows,
    EventReader,
)
from zymi_tui.project.reader import read_project
from zymi_tui.replay.call_context import (
    CallContext,
    ClassCall,
    ReplayError,
    self_described,
)
from zymi_tui.replay.calls import Replayer
from zymi_tui.replay.event_pages import event_pages
from zymi_tui.replay.lockstep import lockstep_group, rejoined
from zymi_tui.replay.simulated import SummaryEstimate
from zymi_tui.replay.spilled_events import SpilledEvents
from zymi_tui.replay.store_ends import StoreEnds, store_ends

# decoded events, as they come, kept, or set down in a file
Events = AsyncGenerator[ReplayEvent, None] | list[ReplayEvent] | SpilledEvents
DECODED_PAGE = 256  # events kept decoded are replayed this many at a time (`replay_groups(events=[...])`)


def agent_knobs(events: Sequence[ReplayEvent], stream_id: str) -> ContextKnobs | None:
    """The recorded knobs of a foreign agent's step (its own policy, docs/telemetry-in.md#recorded-and-what-if),
    None if `stream_id` is not one."""
    run, _, step = stream_id.partition(STEP_MARK)
    for se in events:
        kind = se.kind
        if se.stream_id == run and isinstance(kind, WorkflowNodeStarted) and kind.node_id == step:
            described = self_described(kind)
            if described is not None and described.origin == "otel":
                return described.knobs
    return None


def recorded_knobs(project: Path | None) -> ContextKnobs:
    return project_knobs(read_project(project)) if project is not None else ContextKnobs()


def store_texts(reader: EventReader) -> Callable[[str], TextSource] | None:
    """A step stream's text source on `reader`'s store, for builders that drop old texts (None: the
    reader cannot read blocking; builders then keep their texts): see context/texts.py."""
    return partial(StoreTexts, reader.rows_at) if isinstance(reader, BlockingRows) else None


def make_replayer(
    project: Path | None, knobs: ContextKnobs | None = None, *, texts: Callable[[str], TextSource] | None = None
) -> Replayer:
    """A replayer for a store recorded with `project` (knobs=None: the recorded knobs); `texts`: see
    `store_texts`."""
    return make_replayers(project, [knobs], texts=texts)[0]


def make_replayers(
    project: Path | None, knobs: Sequence[ContextKnobs | None], *, texts: Callable[[str], TextSource] | None = None
) -> list[Replayer]:
    """One replayer per knob set (None: the recorded knobs), the project read once."""
    if project is None:
        return [Replayer(None, ContextKnobs(), k or ContextKnobs(), explicit=k is not None, texts=texts) for k in knobs]
    read = read_project(project)
    recorded, prefixes = project_knobs(read), ProjectPrefixes(read)
    return [Replayer(prefixes, recorded, k or recorded, explicit=k is not None, texts=texts) for k in knobs]


async def replay_store(
    reader: EventReader,
    *,
    project: Path | None,
    knobs: ContextKnobs | None = None,
    streams: Sequence[str] | None = None,
) -> AsyncIterator[CallContext]:
    """Every LLM call (and failed build) in store order, of the store as it was when the replay began
    (later events are not read). knobs=None: the recorded knobs."""
    async for _, row in replay_groups(reader, project=project, knobs=[knobs], streams=streams):
        assert isinstance(row, CallContext)  # (a `ClassCall` only with figures_only)
        yield row


async def replay_many(
    reader: EventReader,
    *,
    project: Path | None,
    knobs: Sequence[ContextKnobs | None],
    streams: Sequence[str] | None = None,
    figures_only: bool = False,
    events: Events | None = None,
    part: Part | None = None,
) -> AsyncIterator[tuple[int, CallContext | ClassCall]]:
    """`replay_groups`, one knob set's row at a time."""
    groups = replay_groups(
        reader, project=project, knobs=knobs, streams=streams, figures_only=figures_only, events=events, part=part
    )
    async with aclosing(groups):
        async for members, row in groups:
            for i in members:
                yield i, row


async def replay_groups(
    reader: EventReader,
    *,
    project: Path | None,
    knobs: Sequence[ContextKnobs | None],
    streams: Sequence[str] | None = None,
    figures_only: bool = False,
    events: Events | None = None,
    part: Part | None = None,
    reuse_chars: bool = True,
    ends: StoreEnds | None = None,
) -> AsyncGenerator[tuple[Sequence[int], CallContext | ClassCall], None]:
    """`replay_store` under several knob sets in one pass: each event is read and decoded once
    and fed to one replayer per knob set (None = the recorded knobs). Yields (knob set indices, row):
    one row for every knob set that sees it alike (`figures_only`: a lockstep group's class, whose
    figures under its knobs are a `ClassCall` when they are not the row's own).

    `figures_only`: the caller reads only a row's figures (`compare.call_figures`, with its own soft
    cap), not its knobs or messages: the what-if knob sets are then replayed in lockstep by one
    replayer for as long as their builders' states are the same (`lockstep.LockstepReplayer`: fed each
    event once, each build rendered under each set's knobs), a set forked off before the first build
    that would compact under its knobs, and joining the others again once both are idle.

    `events`: the events `replay_events(reader, streams)` gives, already decoded, as they come, kept in
    a list or set down in a file (`advise` replays the events of its first pass again, not reading and
    decoding the store twice).

    `part`: only the events of one range of the store (`store_ranges`), replayed as the whole store's
    replay replays them (without `streams`).

    `reuse_chars=False` (with `figures_only`): the caller prices no cache, so a lockstep class's prefix
    reuse is only whether it breaks (a bool in its `ClassCall`), its bytes not counted.

    `ends`: the store's `StoreEnds`, read once by a caller of several replays (else read here, or
    carried by `part`)."""
    replayers = make_replayers(project, knobs, texts=store_texts(reader))
    if part is not None:
        for replayer in replayers:
            replayer.estimate = copy.copy(part.learned)
    if len(replayers) > 1:  # each event's message converted once for every knob set
        shared = Converted(keep_all=False)
        for replayer in replayers:
            replayer.converted = shared
    known = part.ends if part is not None else ends or await store_ends(reader)
    for replayer in replayers:
        replayer.forget_finished(known.ends, known.closings)
    whatifs = [i for i, r in enumerate(replayers) if figures_only and r.whatif]
    whatifs = whatifs if len(whatifs) > 1 else []  # (one alone is replayed as it is)
    alone = [(i, r) for i, r in enumerate(replayers) if i not in whatifs]
    lockstep = [lockstep_group(replayers, whatifs, reuse_chars=reuse_chars)] if whatifs else []
    top = known.top if part is None else part.until
    wanted = set(streams) if streams else None
    after = 0 if part is None else part.after
    if events is None:
        source = event_pages(reader, streams, after=after)
    elif isinstance(events, SpilledEvents):
        source = _spilled_pages(events, after)
    else:
        source = _pages_of(events) if isinstance(events, list) else _one_by_one(events)
    only = alone[0] if len(alone) == 1 and not lockstep and not figures_only else None
    async with aclosing(source) as pages:  # its read-ahead stopped on a break
        async for page in pages:
            if only is not None:  # one replayer (a plain replay): the loop below without its groups
                i, replayer = only
                feed, queue = replayer.feed, replayer.queue
                for se in page:
                    if se.global_id > top:
                        break
                    feed(se)
                    if queue:
                        for row in replayer.ready():
                            if wanted is None or row.stream_id in wanted:
                                yield (i,), row
                else:
                    continue
                break
            for se in page:
                if se.global_id > top:
                    break
                if len(lockstep) > 1 and STEP_MARK not in se.stream_id:
                    lockstep = rejoined(lockstep, se)
                for i, replayer in alone:
                    replayer.feed(se)
                    for row in replayer.ready():
                        if wanted is None or row.stream_id in wanted:
                            yield (i,), row
                for each in lockstep:  # a group split off here is appended, so fed this event too
                    lockstep += each.split_before(se, replayers)
                    each.replayer.feed(se)
                    for members, seen in each.rows(each.replayer.ready(), wanted):
                        yield members, seen
            else:
                continue
            break
    for i, replayer in alone:
        for row in replayer.flush():
            if wanted is None or row.stream_id in wanted:
                yield (i,), row
    for each in lockstep:
        for members, seen in each.rows(each.replayer.flush(), wanted):
            yield members, seen


async def _pages_of(events: list[ReplayEvent]) -> AsyncGenerator[Iterator[ReplayEvent], None]:
    """Events kept decoded, as pages of DECODED_PAGE."""
    for start in range(0, len(events), DECODED_PAGE):
        yield iter(events[start : start + DECODED_PAGE])


async def _spilled_pages(events: SpilledEvents, after: int) -> AsyncGenerator[Iterator[ReplayEvent], None]:
    """Events set down in a file, from the global id after `after`, a page at a time."""
    for page in events.pages(after):
        yield iter(page)


async def _one_by_one(events: AsyncGenerator[ReplayEvent, None]) -> AsyncGenerator[Iterator[ReplayEvent], None]:
    """Events already decoded, as pages of one (closed with the pages)."""
    async with aclosing(events) as each:
        async for se in each:
            yield iter((se,))


@dataclass(frozen=True)
class Part:
    """One range (after, until] of the store to replay (`store_ranges`), with what a replay has learned
    before it (the recorded summaries, `learned_before`) and where the store's streams end."""

    after: int
    until: int
    learned: SummaryEstimate
    ends: StoreEnds


async def context_at(
    reader: EventReader,
    stream_id: str,
    sequence: int,
    *,
    project: Path | None,
    knobs: ContextKnobs | None = None,
) -> CallContext:
    """One call's context (the LlmCallStarted at `sequence` on `stream_id`)."""
    call, _ = await context_with_previous(reader, stream_id, sequence, project=project, knobs=knobs)
    return call


async def context_with_previous(
    reader: EventReader,
    stream_id: str,
    sequence: int,
    *,
    project: Path | None,
    knobs: ContextKnobs | None = None,
) -> tuple[CallContext, CallContext | None]:
    """One call's context, and the stream's agent call before it (None: the first)."""
    known = {s.stream_id for s in await reader.streams()}
    if stream_id not in known:
        sample = ", ".join(sorted(s for s in known if STEP_MARK in s)[:5])
        raise ReplayError(f"unknown stream {stream_id!r}; step streams with LLM calls include: {sample}")
    seen: list[int] = []
    previous: CallContext | None = None
    compaction: CallContext | None = None  # a what-if compaction made just before the call at `sequence`
    async for row in replay_store(reader, project=project, knobs=knobs, streams=[stream_id]):
        if row.sequence == sequence and not row.hard_cap_failure:
            if not (row.whatif and row.is_compaction):
                return row, previous
            compaction = compaction or row
        if not row.simulated:
            seen.append(row.sequence)
        if not row.is_compaction and not row.hard_cap_failure and row.rendered is not None:
            previous = row
    if compaction is not None:
        return compaction, previous
    calls = ", ".join(str(s) for s in seen[:20]) + (" ..." if len(seen) > 20 else "")
    raise ReplayError(f"no LLM call at {stream_id} seq {sequence}; its LlmCallStarted sequences are: {calls}")
