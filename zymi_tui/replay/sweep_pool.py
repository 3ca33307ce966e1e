"""What-ifs replayed on a process pool: a sweep's grid points, `compare`'s profiles, `advise`'s
candidates. The store is cut into ranges that replay independently (`store_ranges`: no stream spans a
cut; many runs one after another give many such places): each worker replays every profile over its
ranges, so the store is decoded once in all, each range by one worker. A store with no such place
(one long run) is one range: its profiles are dealt to the workers instead, each replaying its share
in one pass over the store. A worker totals each call's figures as they come (a `Tally` per profile)
and keeps none of them, so its memory does not grow with the store; the parent adds up the ranges'
tallies and prices them as the one-process replay does, with the tokens-per-byte ratio of the basis
profile, which it works out from the store's recorded calls alone (`basis_sums`) while the workers
start (or is given). Only the figures made before the ratio is known wait for it (at most BUFFER_MAX,
then the worker waits). The parent gets each profile's totals (per run if asked), no per-call figures."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import signal
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.sharedctypes import SynchronizedArray
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from zymi_tui import GC_THRESHOLD as GC_THRESHOLD  # (advise_cmds takes it from here)
from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.replay.compare import (
    Comparison,
    Profiles,
    Progress,
    basis_index,
    close_tally,
    collect_calls,
    comparison_of,
    profile_runs,
    profiles_label,
    tally_for,
)
from zymi_tui.replay.costs import Pricing
from zymi_tui.replay.figures import CallFigure, ProfileRun, RecordedOutput, ratio_of
from zymi_tui.replay.recorded_calls import recorded_call_sums
from zymi_tui.replay.store_ends import StoreEnds, store_ends
from zymi_tui.replay.store_ranges import Range, learned_before, store_ranges
from zymi_tui.replay.store_replay import Part, replay_groups
from zymi_tui.replay.tally import Tally

TICK_S = 0.25  # how often the parent reports the workers' progress
BUFFER_MAX = 100_000  # figures a worker holds while the ratio is not known yet; past that, it waits


class _Stopped(Exception):
    """The parent asked the workers to stop (cancelled, or its progress callback raised)."""


_done: Any = None  # per worker slot: fraction of the store replayed (a shared array of doubles)
_stop: Event | None = None
_sums: Any = None  # the basis profile's `recorded_sums` (a shared array of 3 integers) ...
_summed: Event | None = None  # ... set once they are there


def _init(done: Any, stop: Event, sums: Any, summed: Event) -> None:
    global _done, _stop, _sums, _summed
    _done, _stop, _sums, _summed = done, stop, sums, summed
    gc.set_threshold(GC_THRESHOLD)


def deal_profiles(profiles: Profiles, recorded: ContextKnobs, workers: int) -> list[list[int]]:
    """The profiles' indices per worker: the sets that differ only in their soft cap together (one
    replayer may run them as one), the biggest such family first to the worker holding the fewest."""
    families: dict[object, list[int]] = {}
    for i, (_, knobs) in enumerate(profiles):
        k = knobs or recorded
        key = (k.observation_window, k.forget_after_turns, k.min_tail_turns, k.hard_cap_chars) if k != recorded else i
        families.setdefault(key, []).append(i)
    shares: list[list[int]] = [[] for _ in range(workers)]
    for family in sorted(families.values(), key=len, reverse=True):
        min(shares, key=len).extend(family)
    return [sorted(share) for share in shares]


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (once per process; the pool's locks need it) on the
    real stderr: in a Textual app sys.stderr is a capture whose fileno() is -1, which the tracker's
    spawn refuses ("bad value(s) in fds_to_keep")."""
    captured = sys.stderr
    try:
        usable = captured.fileno() >= 0
    except (OSError, ValueError, AttributeError):  # no descriptor at all: the tracker does without
        usable = True
    if usable or sys.__stderr__ is None:
        return
    sys.stderr = sys.__stderr__
    try:
        resource_tracker.ensure_running()
    finally:
        sys.stderr = captured


def _publish(task: asyncio.Task[tuple[int, int, int]], sums: Any, summed: Event) -> None:
    """The basis sums, to the workers waiting for them (as soon as the parent's pass ends)."""
    if not task.cancelled() and task.exception() is None:
        sums[:] = task.result()
        summed.set()


@dataclass(frozen=True)
class Share:
    """One worker's job: its `profiles` of the grid replayed over the store, then totalled and priced;
    progress in slot `slot`."""

    location: StoreLocation
    project: Path | None
    profiles: Profiles
    recorded_knobs: ContextKnobs
    streams: Sequence[str] | None
    slot: int
    last_global_id: int
    pricing: Pricing
    part: Range | None = None  # one range of the store (None: the whole store)
    per_run: bool = False  # totals per run kept too (`compare`)


@dataclass
class Totalled:
    """A share's figures, per profile of it: its tally over the share's range (not priced yet), and
    whether some of its calls are a foreign agent's."""

    tallies: list[Tally]
    foreign: list[bool]


def _replay_share(share: Share) -> Totalled:
    out: list[Totalled] = []

    async def main() -> None:  # the result kept out of the main task, which asyncio.run formats at its end
        out.append(await _share(share))

    asyncio.run(main())
    return out[0]


class _Tallies:
    """The share's figures as they come: held until the ratio is known, then totalled per profile."""

    def __init__(self, share: Share, count: int) -> None:
        self.share = share
        self.count = count
        self.tallies: list[Tally] | None = None
        self.held: list[tuple[int, list[CallFigure]]] = []
        self.held_figures = 0

    def take(self, index: int, figures: list[CallFigure]) -> None:
        if self.tallies is None:
            self.held.append((index, figures))
            self.held_figures += len(figures)
            if self.held_figures < BUFFER_MAX:
                return
            self.wait()  # a store far bigger than the parent's pass can keep ahead of: wait for the ratio
            assert self.tallies is not None
        for f in figures:
            self.tallies[index].add(f)

    def ready(self) -> bool:
        """Whether the ratio is known (and the held figures totalled); checked between calls."""
        if self.tallies is None and _summed is not None and _summed.is_set():
            self._start()
        return self.tallies is not None

    def wait(self) -> None:
        while not self.ready():
            assert _summed is not None
            if _stop is not None and _stop.is_set():
                raise _Stopped
            _summed.wait(TICK_S)

    def _start(self) -> None:
        ratio, _ = ratio_of(*_sums[:])
        self.tallies = [tally_for(self.share.pricing, ratio, per_run=self.share.per_run) for _ in range(self.count)]
        held, self.held = self.held, []
        for index, figures in held:
            for f in figures:
                self.tallies[index].add(f)


_ends: dict[StoreLocation, StoreEnds] = {}  # per store, in a worker: where its streams end


async def _part(reader: EventReader, share: Share) -> Part | None:
    if share.part is None:
        return None
    after, until = share.part
    if share.location not in _ends:
        _ends[share.location] = await store_ends(reader)
    return Part(after, until, await learned_before(reader, after), _ends[share.location])


async def _share(share: Share) -> Totalled:
    runs = profile_runs(share.profiles, share.recorded_knobs)
    tallies = _Tallies(share, len(runs))
    after, until = share.part or (0, share.last_global_id)

    def tick(fraction: float, _label: str) -> None:
        if _stop is not None and _stop.is_set():
            raise _Stopped
        _done[share.slot] = min(1.0, max(0.0, (fraction * until - after) / max(1, until - after)))
        tallies.ready()

    reader = await open_reader(share.location)
    try:
        part = await _part(reader, share)
        calls = replay_groups(reader, project=share.project, knobs=[k for _, k in share.profiles],
                              streams=share.streams, figures_only=True, part=part)  # fmt: skip
        await collect_calls(calls, runs, last_global_id=until, progress=tick, label="", take=tallies.take)
    finally:
        await reader.close()
    _done[share.slot] = 1.0
    tallies.wait()
    assert tallies.tallies is not None
    for tally in tallies.tallies:
        tally.cache = None  # its streams' last timestamps: no later range has those streams
    return Totalled(tallies.tallies, [run.foreign for run in runs])


async def basis_sums(location: StoreLocation, streams: Sequence[str] | None, *, whatif: bool) -> tuple[int, int, int]:
    """`recorded_call_sums` of the store at `location`."""
    reader = await open_reader(location)
    try:
        return await recorded_call_sums(reader, streams, whatif=whatif)
    finally:
        await reader.close()


async def replay_on_pool(
    location: StoreLocation,
    project: Path | None,
    profiles: Profiles,
    *,
    recorded_knobs: ContextKnobs,
    streams: Sequence[str] | None,
    workers: int,
    last_global_id: int,
    progress: Progress | None,
    pricing: Pricing,
    model: str | None,
    output: RecordedOutput | None = None,
    per_run: bool = False,
    sums: tuple[int, int, int] | None = None,
) -> Comparison:
    """The comparison of the profiles, as `compare_profiles` makes it in one process, less each
    profile's per-call figures (`calls` left empty) and, unless `per_run`, its per-run totals. The
    store's ranges (`store_ranges`; without `streams`), else the profiles, are shared among `workers`
    processes (spawned, so that a parent with threads, such as the dashboard, is never forked).
    `sums`: the basis profile's `recorded_sums`, when the caller has them (else worked out here).
    `progress` is called every TICK_S with the mean fraction of the jobs; if it raises, or the
    awaiting task is cancelled, the workers are told to stop and are waited for before the error
    propagates (the pool's processes are always waited for)."""
    ranges = await _ranges(location, workers) if streams is None else [(0, last_global_id)]
    if len(ranges) > 1:
        jobs: list[tuple[Range | None, list[int]]] = [(r, list(range(len(profiles)))) for r in ranges]
    else:
        jobs = [(None, share) for share in deal_profiles(profiles, recorded_knobs, max(1, min(workers, len(profiles))))]
    workers = max(1, min(workers, len(jobs)))
    context = multiprocessing.get_context("spawn")
    _start_resource_tracker()
    done: SynchronizedArray[float] = context.Array("d", len(jobs))
    stop = context.Event()
    shared_sums: SynchronizedArray[int] = context.Array("q", 3)
    summed = context.Event()
    label = profiles_label(profiles)
    runs = profile_runs(profiles, recorded_knobs)
    basis = basis_index(runs)
    if sums is not None:
        shared_sums[:] = sums
        summed.set()
    initargs = (done, stop, shared_sums, summed)
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_init, initargs=initargs)
    futures: list[asyncio.Future[Totalled]] = []
    summing: asyncio.Future[tuple[int, int, int]] | None = None
    try:
        with sigint_blocked():  # the pool starts its processes as jobs are submitted
            for slot, (part, share) in enumerate(jobs):
                job = Share(location, project, [profiles[i] for i in share], recorded_knobs, streams, slot,
                            last_global_id, pricing, part, per_run)  # fmt: skip
                futures.append(asyncio.wrap_future(pool.submit(_replay_share, job)))
        if sums is None:
            whatif = basis is None or not runs[basis].recorded
            summing = asyncio.ensure_future(basis_sums(location, streams, whatif=whatif))
            summing.add_done_callback(lambda task: _publish(task, shared_sums, summed))
        every: list[asyncio.Future[Any]] = [*futures, *([summing] if summing else [])]
        pending = set(every)
        while pending:
            _, pending = await asyncio.wait(pending, timeout=TICK_S, return_when=asyncio.FIRST_EXCEPTION)
            failed = [e for f in every if f.done() and (e := f.exception()) is not None]
            if failed:
                raise failed[0]
            if progress is not None:
                maybe = progress(sum(done[:]) / len(jobs), label)
                if maybe is not None:
                    await maybe
        merge_totalled(runs, [share for _, share in jobs], [f.result() for f in futures], pricing, output)
        known = summing.result() if summing is not None else sums
        assert known is not None
        ratio, source = ratio_of(*known)
        return comparison_of(pricing, runs, ratio, source, model, output)
    except BaseException:
        stop.set()
        for future in futures:
            future.cancel()  # a worker's _Stopped is expected: not "an exception never retrieved"
        if summing is not None:
            summing.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def sigint_blocked() -> Iterator[None]:
    """Processes started in here are born with SIGINT blocked (a child inherits the signal mask) and keep
    it so: a Ctrl-C at a terminal goes to the whole foreground process group, workers included, but it is
    the parent's to handle (it tells them to stop and waits for them), not a traceback in each worker.
    A Ctrl-C meanwhile reaches the parent when it leaves (the signal was only held)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


PARTS_PER_WORKER = 2  # ranges per worker: a worker that is done early takes another


async def _ranges(location: StoreLocation, workers: int) -> list[Range]:
    reader = await open_reader(location)
    try:
        return store_ranges(await reader.streams(), workers * PARTS_PER_WORKER)
    finally:
        await reader.close()


def merge_totalled(
    runs: list[ProfileRun], shares: list[list[int]], results: list[Totalled], how: Pricing, out: RecordedOutput | None
) -> None:
    """Each profile's tallies over the ranges, in store order, added up and priced into its run."""
    tallies: dict[int, Tally] = {}
    for share, result in zip(shares, results, strict=True):
        for index, tally, foreign in zip(share, result.tallies, result.foreign, strict=True):
            runs[index].foreign |= foreign
            if index in tallies:
                tallies[index].absorb(tally)
            else:
                tallies[index] = tally
    for index, tally in tallies.items():
        close_tally(how, tally, runs[index], out)
