"""Pass two of `advise`: every candidate replayed over the store, in one pass in this process (`in_one`), or
in two halves on two cores (`halves`): this process replays one half and a forked child the
other, both from pass one's decoded events (the child has them by the fork: nothing is read, decoded or
sent to it), or, from the size at which pass one keeps none in memory (`WHATIF_POOL_MIN_EVENTS`), each
reading its half's pages of the file pass one set them down in (`SpilledEvents`; where it could not,
from the store again, as one process would read them all). A store of many runs is cut
into two ranges (`store_ranges`: no stream on both sides), each replayed under every candidate: the two
halves cost what one pass does. One long run (no such cut, or `--runs` given) has its candidates dealt
in two shares (`deal_profiles`), each replayed over the whole store: each share builds every call's
context again (long_100k: 1.9 and 1.8 s of CPU against 2.6 s for one pass), so it is split only while a
core is free (`core_free`: idle over pass one): on a busy machine each session's processes share one
slice of it (the kernel's autogroups, when enabled), and the second share would only add its CPU time
(paired runs at load 10: 7.1x -> 9.1x the scan's CPU, no faster); and only from pass one's decoded
events kept in memory: where each share would decode the store again (long_1m, beside another busy
process) the two used 78-84 s of CPU against one pass's 52-54 s, and took 70-80 s against 55-57; and
from its events set down in a file, at load ~2.4 the two used 65.0 s of CPU and took 49.9 s against
one pass's 38.5-38.7 s and 39.0-39.3 s (each share's replay, not its candidates, is most of pass two
there). The child sends back its tallies
(pickled, a few per candidate) and they are added up and priced as the pool's are (`merge_totalled`):
the figures are those of one pass in one process. The child is `forked.Forked` (only a process of its own
forks)."""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.cores import usable_cores
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.replay_view import ReplayEvent
from zymi_tui.events.store import EventReader
from zymi_tui.replay.advice.forked import Forked
from zymi_tui.replay.call_context import CallContext, ClassCall
from zymi_tui.replay.compare import collect_calls, profile_runs, tally_for
from zymi_tui.replay.costs import Pricing
from zymi_tui.replay.figures import RecordedOutput, Totals, call_figures
from zymi_tui.replay.simulated import SummaryEstimate
from zymi_tui.replay.spilled_events import SpilledEvents
from zymi_tui.replay.store_ends import StoreEnds
from zymi_tui.replay.store_ranges import learned_before, store_ranges
from zymi_tui.replay.store_replay import Part, replay_groups
from zymi_tui.replay.sweep_pool import Totalled, deal_profiles, merge_totalled
from zymi_tui.replay.tally import Tally

Profiles = list[tuple[str, ContextKnobs | None]]
Decoded = list[ReplayEvent] | SpilledEvents | None  # pass one's events: kept, set down in a file, or neither
# below this many events one process replays the candidates: a fork, its pages copied as they are written
# and its store opened again cost more than half of a small pass two saves
HALVES_MIN_EVENTS = 20_000
FREE_IDLE = 0.5  # cores idle on average over pass one from which one long run's candidates are dealt in two


def halves_from() -> int:
    """HALVES_MIN_EVENTS, or ZYMI_TUI_ADVISE_HALVES_FROM (the tests lower it to split a small store)."""
    return int(os.environ.get("ZYMI_TUI_ADVISE_HALVES_FROM", HALVES_MIN_EVENTS))


def in_halves(last_global_id: int) -> bool:
    """Whether pass two of a store of `last_global_id` events may be split between two processes."""
    return usable_cores() >= 2 and last_global_id >= halves_from()


def core_free(idle: float | None) -> bool:
    """Whether a core is free: at least FREE_IDLE of the usable cores stood `idle` over pass one (None: not
    known, then whether the one-minute load average is under the usable cores less one); or whether the
    load average is under ZYMI_TUI_ADVISE_LOAD_BELOW (the tests raise it to deal a long run's candidates on
    a busy machine, or lower it to 0)."""
    below = os.environ.get("ZYMI_TUI_ADVISE_LOAD_BELOW")
    if below:
        return os.getloadavg()[0] < float(below)
    if idle is not None:
        return idle >= FREE_IDLE
    return os.getloadavg()[0] < usable_cores() - 1


@dataclass(frozen=True)
class PassTwo:
    """What both processes replay: the candidates (`tried`) of a store recorded with `project` under
    `recorded`, their calls' tokens at pass one's tokens per byte (`ratio`), priced as `how` says, the
    store as pass one replayed it (`ends`: read once, before it)."""

    project: Path | None
    tried: Profiles
    recorded: ContextKnobs
    streams: Sequence[str] | None
    ratio: float
    how: Pricing
    ends: StoreEnds


@dataclass(frozen=True)
class Half:
    """One process's share of pass two: its candidates (indices) over its events (None: the store's, read
    again), read as `part` says (None: all of them)."""

    profiles: list[int]
    events: Decoded
    part: Part | None


async def halves(
    reader: EventReader,
    location: StoreLocation,
    job: PassTwo,
    output: RecordedOutput,
    decoded: Decoded,
    idle: float | None = None,
) -> dict[str, Totals] | None:
    """Every candidate's totals (as `in_one` makes them), pass two in two halves; None
    when it is one long run and no core is free (the caller replays them in one pass). `decoded`: pass
    one's events (None: not kept, each process reads its half's events from the store again; set down in
    a file: each process reads its half's pages of it); `idle`:
    the usable cores that stood idle over pass one (`IdleClock`), for `core_free`."""
    top = job.ends.top
    ranges = store_ranges(await reader.streams(), 2) if job.streams is None else [(0, top)]
    # (a store written to since pass one may be cut later: a cut that no stream crosses now was one then)
    if len(ranges) == 2 and ranges[0][1] < top:
        everyone = list(range(len(job.tried)))
        seam = ranges[0][1]
        first: Decoded = decoded if isinstance(decoded, SpilledEvents) else None  # (each reads its pages)
        later: Decoded = first
        if isinstance(decoded, list):
            cut = bisect.bisect_right(decoded, seam, key=lambda se: se.global_id)
            first, later = decoded[:cut], decoded[cut:]
        mine = Half(everyone, first, Part(0, seam, SummaryEstimate(), job.ends))
        theirs = Half(everyone, later, Part(seam, top, await learned_before(reader, seam), job.ends))
    elif isinstance(decoded, list) and core_free(idle):  # (not from a file: see the module)
        shares = deal_profiles(job.tried, job.recorded, 2)
        mine = Half(shares[0], decoded, Part(0, top, SummaryEstimate(), job.ends))
        theirs = Half(shares[1], decoded, Part(0, top, SummaryEstimate(), job.ends))
    else:
        return None
    child = Forked(
        location, lambda own_reader: _replay_half(own_reader, job, theirs), "replaying half of the candidates"
    )
    try:
        own = await _replay_half(reader, job, mine)
        other = child.result()
        assert isinstance(other, Totalled)
    finally:
        child.stop()
    return _priced(job, [mine.profiles, theirs.profiles], [own, other], output)


async def in_one(reader: EventReader, job: PassTwo, output: RecordedOutput, decoded: Decoded) -> dict[str, Totals]:
    """Every candidate's totals, from one pass in this process over pass one's decoded events (kept, or set
    down in a file; None: over the store, read again)."""
    everyone = list(range(len(job.tried)))
    return _priced(job, [everyone], [await _replay_half(reader, job, Half(everyone, decoded, None))], output)


def _priced(
    job: PassTwo, shares: list[list[int]], results: list[Totalled], output: RecordedOutput
) -> dict[str, Totals]:
    """Each candidate's tallies (in store order) added up and priced: its totals by name."""
    runs = profile_runs(job.tried, job.recorded)
    merge_totalled(runs, shares, results, job.how, output)
    return {run.name: run.total for run in runs}


async def _replay_half(reader: EventReader, job: PassTwo, half: Half) -> Totalled:
    """`half`'s candidates replayed over its events, each call's figures totalled as they come (a `Tally`
    per candidate, at pass one's tokens per byte, as `compare` and the pool calibrate them) and none kept."""
    profiles = [job.tried[i] for i in half.profiles]
    runs = profile_runs(profiles, job.recorded)
    tallies = [tally_for(job.how, job.ratio, per_run=False) for _ in runs]
    shared = SharedTallies(tallies, job)
    calls = replay_groups(reader, project=job.project, knobs=[k for _, k in profiles], streams=job.streams,
                          figures_only=True, events=half.events, part=half.part,
                          reuse_chars=any(t.reads_reuse for t in tallies), ends=job.ends)  # fmt: skip
    await collect_calls(calls, runs, last_global_id=0, progress=None, label="", take_shared=shared.take)
    shared.close()
    for tally in tallies:
        tally.cache = None  # its streams' last timestamps: no later range has those streams
    return Totalled(tallies, [run.foreign for run in runs])


class SharedTallies:
    """`tallies` (one a candidate) fed a call's figures once for every candidate that shares them: into
    a tally of that group of candidates (each figure's tokens estimated once, added once), each group's
    totals added to its members' at `close`, what adding each figure to each member's tally gives (sums
    and peaks). With a cache model (its state is each candidate's own), each member's tally is fed."""

    def __init__(self, tallies: list[Tally], job: PassTwo) -> None:
        self.tallies = tallies
        self.job = job
        self.grouped = all(t.cache is None and t.per_run is None for t in tallies)
        self.groups: dict[tuple[int, ...], Tally] = {}

    def take(self, indices: list[int], call: CallContext | ClassCall, soft_cap: int) -> None:
        """`call`'s figures (`call_figures(call, soft_cap)`) added for the candidates `indices`; a lockstep
        class's (a `ClassCall`) to its group's tally with no `CallFigure` made (`Tally.add_class`)."""
        if not self.grouped:
            figures = call_figures(call, soft_cap)
            for i in indices:
                for f in figures:
                    self.tallies[i].add(f)
            return
        key = tuple(indices)
        tally = self.groups.get(key)
        if tally is None:
            tally = self.groups[key] = tally_for(self.job.how, self.job.ratio, per_run=False)
        if isinstance(call, ClassCall):
            tally.add_class(call, soft_cap)
            return
        for f in call_figures(call, soft_cap):
            tally.add(f)

    def close(self) -> None:
        """Each group's totals (and runs seen) added to its members' tallies."""
        for key, tally in self.groups.items():
            for i in key:
                self.tallies[i].absorb(tally)
        self.groups = {}
