"""A sweep's grid points replayed on a process pool: each worker opens the store once and replays
its share of the profiles in one pass over it (one decoding of the store per worker, not per point),
then totals and prices them as the one-process sweep does (`finish`), with the tokens-per-byte ratio
of the recorded profile, which the worker holding that profile shares with the others; the parent
gets each profile's totals, not its per-call figures."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.sharedctypes import SynchronizedArray
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation
from zymi_tui.replay.compare import (
    Comparison,
    Pricing,
    Profiles,
    Progress,
    RecordedOutput,
    Totals,
    basis_index,
    collect_calls,
    profile_runs,
    profiles_label,
    ratio_of,
    recorded_sums,
    replay_profiles,
)

TICK_S = 0.25  # how often the parent reports the workers' progress
# a worker keeps every call's figures and the live steps' builders: at Python's default (700 new
# objects) the collector rescans them thousands of times, ~25% of a worker's CPU at 100k events
GC_THRESHOLD = 50_000


class _Stopped(Exception):
    """The parent asked the workers to stop (cancelled, or its progress callback raised)."""


_done: Any = None  # per worker slot: fraction of the store replayed (a shared array of doubles)
_stop: Event | None = None
_sums: Any = None  # the recorded profile's `recorded_sums` (a shared array of 3 integers) ...
_summed: Event | None = None  # ... set once they are there


def _init(done: Any, stop: Event, sums: Any, summed: Event) -> None:
    global _done, _stop, _sums, _summed
    _done, _stop, _sums, _summed = done, stop, sums, summed
    gc.set_threshold(GC_THRESHOLD)


def _deal(profiles: Profiles, recorded: ContextKnobs, workers: int) -> list[list[int]]:
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


def default_workers() -> int:
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Share:
    """One worker's job: its `profiles` of the grid replayed over the store, then totalled and priced;
    progress in slot `slot`; `basis`: the index among them of the profile tokens are calibrated on."""

    location: StoreLocation
    project: Path | None
    profiles: Profiles
    recorded_knobs: ContextKnobs
    streams: Sequence[str] | None
    slot: int
    last_global_id: int
    basis: int | None
    pricing: Pricing
    output: RecordedOutput | None


Totalled = list[tuple[dict[str, Totals], Totals]]  # per profile of a share: its totals per run and in all


def _replay_share(share: Share) -> Totalled:
    out: list[Totalled] = []

    async def main() -> None:  # the result kept out of the main task, which asyncio.run formats at its end
        out.append(await _share(share))

    asyncio.run(main())
    return out[0]


async def _share(share: Share) -> Totalled:
    def tick(fraction: float, _label: str) -> None:
        if _stop is not None and _stop.is_set():
            raise _Stopped
        _done[share.slot] = fraction

    reader = await open_reader(share.location)
    try:
        runs = profile_runs(share.profiles, share.recorded_knobs)
        calls = replay_profiles(reader, share.project, share.profiles, share.streams)
        await collect_calls(calls, runs, last_global_id=share.last_global_id, progress=tick, label="")
    finally:
        await reader.close()
    if share.basis is not None:
        _sums[:] = recorded_sums(runs[share.basis].calls)
        assert _summed is not None
        _summed.set()
    while _summed is not None and not _summed.wait(TICK_S):
        tick(1.0, "")
    ratio, _ = ratio_of(*_sums[:])
    for run in runs:
        share.pricing.summarize(run, ratio, share.output)
    return [(run.per_run, run.total) for run in runs]


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
) -> Comparison:
    """The comparison of the profiles, as `compare_profiles` makes it in one process, less each
    profile's per-call figures (`calls` left empty). The profiles are dealt round-robin to `workers`
    processes (spawned, so that a parent with threads, such as the dashboard, is never forked).
    `progress` is called every TICK_S with the mean fraction of the workers; if it raises, or the
    awaiting task is cancelled, the workers are told to stop and are waited for before the error
    propagates."""
    workers = max(1, min(workers, len(profiles)))
    shares = _deal(profiles, recorded_knobs, workers)
    context = multiprocessing.get_context("spawn")
    _start_resource_tracker()
    done: SynchronizedArray[float] = context.Array("d", workers)
    stop = context.Event()
    sums: SynchronizedArray[int] = context.Array("q", 3)
    summed = context.Event()
    label = profiles_label(profiles)
    runs = profile_runs(profiles, recorded_knobs)
    basis = basis_index(runs)
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_init, initargs=(done, stop, sums, summed))
    futures: list[asyncio.Future[Totalled]] = []
    try:
        for slot, share in enumerate(shares):
            job = Share(location, project, [profiles[i] for i in share], recorded_knobs, streams, slot, last_global_id,
                        share.index(basis) if basis in share else None, pricing, output)  # fmt: skip
            futures.append(asyncio.wrap_future(pool.submit(_replay_share, job)))
        pending: set[asyncio.Future[Totalled]] = set(futures)
        while pending:
            _, pending = await asyncio.wait(pending, timeout=TICK_S, return_when=asyncio.FIRST_EXCEPTION)
            failed = [f.exception() for f in futures if f.done() and f.exception() is not None]
            if failed:
                raise failed[0]  # type: ignore[misc]
            if progress is not None:
                maybe = progress(sum(done[:]) / workers, label)
                if maybe is not None:
                    await maybe
        for share, future in zip(shares, futures, strict=True):
            for index, (per_run, total) in zip(share, future.result(), strict=True):
                runs[index].per_run, runs[index].total = per_run, total
        ratio, source = ratio_of(*sums[:])
        return pricing.comparison(runs, ratio, source, model, output)
    except BaseException:
        stop.set()
        for future in futures:
            future.cancel()  # a worker's _Stopped is expected: not "an exception never retrieved"
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
