"""Pass one of `advise`: the store replayed under the current knobs, each call shown to the detectors
(`Watch`) and its figures totalled into the baseline, the figures `compare` gives the recorded knobs.

Below the pool's size (`keep`) pass one's decoded events are kept for pass two, which replays them in
this process, and so are its calls' figures (as `compare_profiles` keeps them: few beside the events).
From it nothing of the store is kept in memory (with `spill`, its decoded events are set down in a
temporary file for pass two: `SpilledEvents`, the store not read and decoded again): the tokens per
byte are worked out from the store's recorded LLM calls alone (`recorded_call_sums`, as the pool
does), so each call's figures are totalled as they come
(`Tally`) and dropped. With no cache model (none reads a call's tokens as they come) the recorded calls
are summed from the events pass one decodes anyway (`RecordedCalls`), and the tokens of the calls whose
tokens are estimated at that tokens per byte are totalled at the end (`_Totalled.later`): no pass and no
process of their own (a pass of its own took 3.7 s of CPU on long_1m, 7% of the command's). With a cache
model, and a second process allowed (`sums_from`), a forked child works them out while this one replays;
the calls' figures made meanwhile are held (at most HELD_MAX, then the child is waited for) and totalled
once they are known; with no second process, a pass of their own before pass one works them out."""

from __future__ import annotations

from array import array
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zymi_tui.events.kinds import LlmCallCompleted
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import EventReader
from zymi_tui.events.stored import BadRow
from zymi_tui.replay.advice.forked import Forked
from zymi_tui.replay.advice.watch import Watch
from zymi_tui.replay.cache import CacheModel, predict
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.compare import (
    Comparison,
    ProfileCalls,
    close_tally,
    collect_calls,
    compare_profiles,
    comparison_of,
    profile_runs,
    replay_profiles,
    tally_for,
)
from zymi_tui.replay.costs import CacheFamily, Pricing, pricing
from zymi_tui.replay.event_pages import replay_events
from zymi_tui.replay.figures import (
    HEURISTIC_TOKENS_PER_BYTE,
    CallFigure,
    RecordedOutput,
    Totals,
    ratio_of,
    recorded_sums,
    tokens_at,
    tokens_recorded,
)
from zymi_tui.replay.recorded_calls import CALL_KINDS, RecordedCalls, recorded_call_sums
from zymi_tui.replay.spilled_events import SpilledEvents
from zymi_tui.replay.store_ends import StoreEnds
from zymi_tui.replay.tally import Tally

RECORDED = [("recorded", None)]
HELD_MAX = 20_000  # calls' figures held while the child works out the tokens per byte (then it is waited for)
READY_EVERY = 256  # figures held between two looks at whether the child is done


@dataclass
class PassOne:
    cmp: Comparison  # the recorded knobs' figures (`calls` empty unless kept)
    sums: tuple[int, int, int]  # their `recorded_sums`: what calibrates tokens per byte
    breakpoints: tuple[int, int] | None  # cache reads and writes with a breakpoint per request (est.)
    decoded: list[ReplayEvent] = field(default_factory=list)  # the events, when kept
    spilled: SpilledEvents | None = None  # the events set down in a file, when asked (and none was refused)


async def pass_one(
    reader: EventReader,
    project: Path | None,
    streams: Sequence[str] | None,
    watch: Watch,
    common: dict[str, Any],
    *,
    keep: bool,
    breakpoints: CacheFamily | None,
    ends: StoreEnds,
    sums_from: StoreLocation | None = None,
    spill: bool = False,
    spill_in: Path | None = None,
) -> PassOne:
    """Pass one (`common`: the keywords of `compare_profiles`; its `output` empty: the output tokens of the
    completions it replays are counted into it, as `recorded_output` counts them); `breakpoints`: the
    cache family whose reads and writes with a breakpoint at the end of every sent request are estimated;
    `ends`: the store's, read once for both passes; `sums_from` (not `keep`, a cache model): the store's
    location, for a forked child to work out the tokens per byte while this process replays; `spill` (not
    `keep`): the decoded events set down in a temporary file for pass two (the caller closes it), made in
    the folder `spill_in` where it can be."""
    decoded: list[ReplayEvent] = []
    spilled = _spilled(spill_in) if spill and not keep else None
    output: RecordedOutput = common["output"]  # counted here, read once the pass is over
    wanted = None if streams is None else set(streams)

    async def recording(summed: RecordedCalls | None) -> AsyncGenerator[ReplayEvent, None]:
        async with aclosing(replay_events(reader, streams)) as events:
            async for se in events:
                if keep:
                    decoded.append(se)
                elif spilled is not None:
                    spilled.add(se)
                if isinstance(se.kind, LlmCallCompleted) and (wanted is None or se.stream_id in wanted):
                    output.count(se.stream_id, se.source, se.kind)
                if summed is not None:
                    summed.feed(se)
                yield se

    async def watched(summed: RecordedCalls | None = None) -> ProfileCalls:
        async for members, call in replay_profiles(reader, project, RECORDED, streams, recording(summed), ends):
            assert isinstance(call, CallContext)  # (the recorded knobs alone: every row a context)
            await watch.feed(call)  # what the detectors read of it: the call itself is not kept
            yield members, call

    if keep:
        cmp = await compare_profiles(watched(), RECORDED, **common)
        await watch.finish()
        sent = [f for f in cmp.profiles[0].calls if f.sent]
        modelled = None if breakpoints is None else predict(sent, breakpoints, breakpoints=True)
        bp = None if modelled is None else (sum(x.cached for x in modelled), sum(x.written for x in modelled))
        return PassOne(cmp, recorded_sums(cmp.profiles[0].calls), bp, decoded)
    how = pricing(common["prices"], common["model"], common["provider"])
    runs = profile_runs(RECORDED, common["recorded_knobs"])
    totalled = _Totalled(how, CacheModel(breakpoints, breakpoints=True) if breakpoints is not None else None)
    mark = len(reader.problems)  # where the rows the sums skip are reported, as if read before pass one
    child, summed = None, None
    if totalled.model is None and how.cache_family is None:
        summed = RecordedCalls(whatif=False)  # fed by `recording`: no pass, no child of their own
        totalled.later()
    elif sums_from is None:
        totalled.known(await recorded_call_sums(reader, streams, whatif=False))
    else:
        child = Forked(sums_from, lambda own: _call_sums(own, streams), "working out the tokens per byte")
    try:
        held: list[CallFigure] = []

        def take(_index: int, figures: list[CallFigure]) -> None:
            if totalled.tally is not None:
                totalled.add(figures)
                return
            held.extend(figures)
            if len(held) >= HELD_MAX or (len(held) % READY_EVERY < len(figures) and child and child.ready()):
                known()

        def known() -> None:
            assert child is not None
            sums, skipped = child.result()
            reader.problems[mark:mark] = skipped
            totalled.known(sums)
            totalled.add(held)
            held.clear()

        await collect_calls(watched(summed), runs, last_global_id=0, progress=None, label="", take=take)
        if summed is not None:
            totalled.settle(summed.sums)
            reader.problems[mark:mark] = await _call_rows(reader, reader.problems[mark:])
        elif totalled.tally is None:
            known()
    except BaseException:
        if spilled is not None:
            spilled.close()
        raise
    finally:
        if child is not None:
            child.stop()
    await watch.finish()
    assert totalled.tally is not None
    close_tally(how, totalled.tally, runs[0], common["output"])
    ratio, source = ratio_of(*totalled.sums)
    cmp = comparison_of(how, runs, ratio, source, common["model"], common["output"])
    model = totalled.model
    if spilled is not None:
        spilled.finish()
        if spilled.broken:  # (an event it could not encode: pass two reads the store again)
            spilled.close()
            spilled = None
    return PassOne(cmp, totalled.sums, None if model is None else (totalled.read, totalled.written), spilled=spilled)


class _Totalled:
    """Pass one's calls' figures totalled (at the tokens per byte of the recorded calls' `sums`, once
    `known`), with the cache reads and writes a breakpoint per request gives (`model`). With no cache
    model, from `later` on, before the sums are known: the tokens a call recorded are totalled as they
    come, and of a call whose tokens are estimated at the tokens per byte, only its bytes are held (a few
    numbers, `_Estimated`) and its tokens totalled once `settle` gives the sums."""

    def __init__(self, how: Pricing, model: CacheModel | None) -> None:
        self.how, self.model = how, model
        self.sums = (0, 0, 0)
        self.tally: Tally | None = None
        self.read = self.written = 0
        self.estimated: _Estimated | None = None

    def known(self, sums: tuple[int, int, int]) -> None:
        self.sums = sums
        self.tally = tally_for(self.how, ratio_of(*sums)[0], per_run=False)

    def later(self) -> None:
        assert self.model is None and self.how.cache_family is None  # (a cache model reads each call's tokens)
        self.tally, self.estimated = tally_for(self.how, HEURISTIC_TOKENS_PER_BYTE, per_run=False), _Estimated()

    def settle(self, sums: tuple[int, int, int]) -> None:
        """The held calls' tokens, estimated at the tokens per byte of `sums`, added to the totals."""
        assert self.tally is not None and self.estimated is not None
        self.sums = sums
        self.tally.ratio = ratio_of(*sums)[0]
        self.estimated.total(self.tally.ratio, self.tally.total)
        self.estimated = None

    def add(self, figures: list[CallFigure]) -> None:
        tally, model, estimated = self.tally, self.model, self.estimated
        assert tally is not None
        if estimated is not None:
            for f in figures:
                if f.hard_cap_failed or tokens_recorded(f):
                    tally.add(f)  # (tokens recorded, or none counted: the tokens per byte not read)
                else:
                    estimated.hold(f)
                    tally.count(f)
            return
        for f in figures:
            tally.add(f)  # its tokens estimated, then totalled
            if model is not None and f.sent:
                p = model.next(f)
                self.read, self.written = self.read + p.cached, self.written + p.written


def _spilled(folder: Path | None) -> SpilledEvents | None:
    """A file for pass one's events (None where no temporary file can be made: pass two reads the store)."""
    try:
        return SpilledEvents(folder)
    except OSError:
        return None


async def _call_sums(reader: EventReader, streams: Sequence[str] | None) -> tuple[tuple[int, int, int], list[BadRow]]:
    """`recorded_call_sums` (under the recorded knobs), and the rows it skipped as unreadable."""
    return await recorded_call_sums(reader, streams, whatif=False), reader.problems


class _Estimated:
    """The calls of `_Totalled` whose tokens are estimated at a tokens per byte not known yet: each one
    counted with no tokens (`hold`), its bytes, recorded bytes and tokens held (8 bytes each) and its
    tokens added to the totals once the tokens per byte is known (`total`)."""

    def __init__(self) -> None:
        self.chars, self.recorded_chars, self.recorded_tokens = array("q"), array("q"), array("q")
        self.agent = array("b")

    def hold(self, f: CallFigure) -> None:
        self.chars.append(f.chars)
        self.recorded_chars.append(f.recorded_chars)
        recorded = None if f.kind == "simulated summary" else f.recorded_tokens
        self.recorded_tokens.append(-1 if recorded is None else recorded)
        self.agent.append(f.kind == "agent")
        f.tokens, f.tokens_provenance = 0, "estimated"

    def total(self, ratio: float, totals: Totals) -> None:
        for chars, recorded_chars, recorded, agent in zip(
            self.chars, self.recorded_chars, self.recorded_tokens, self.agent, strict=True
        ):
            tokens = tokens_at(ratio, chars, recorded_chars, None if recorded < 0 else recorded)
            totals.tokens_sum += tokens
            if agent and tokens > totals.tokens_peak:
                totals.tokens_peak = tokens


async def _call_rows(reader: EventReader, skipped: list[BadRow]) -> list[BadRow]:
    """Of the rows pass one skipped as unreadable, those of the recorded calls' kinds: the rows a pass of
    their own over those kinds would have named first (`recorded_call_sums`)."""
    kinds = await reader.kinds_of([b.global_id for b in skipped]) if skipped else {}
    return [b for b in skipped if kinds.get(b.global_id) in CALL_KINDS]
