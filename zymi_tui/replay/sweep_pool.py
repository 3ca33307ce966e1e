"""A sweep's grid points replayed on a process pool: each worker opens the store once and replays
its share of the profiles in one pass over it (one decoding of the store per worker, not per point);
the parent merges the per-call figures and totals them as the one-process sweep does."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing.sharedctypes import SynchronizedArray
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import StoreLocation
from zymi_tui.replay.compare import (
    CallFigure,
    ProfileRun,
    Profiles,
    Progress,
    collect_calls,
    profile_runs,
    profiles_label,
    replay_profiles,
)

TICK_S = 0.25  # how often the parent reports the workers' progress


class _Stopped(Exception):
    """The parent asked the workers to stop (cancelled, or its progress callback raised)."""


_done: Any = None  # per worker slot: fraction of the store replayed (a shared array of doubles)
_stop: Event | None = None


def _init(done: Any, stop: Event) -> None:
    global _done, _stop
    _done, _stop = done, stop


def default_workers() -> int:
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Share:
    """One worker's job: its `profiles` of the grid replayed over the store; progress in slot `slot`."""

    location: StoreLocation
    project: Path | None
    profiles: Profiles
    recorded_knobs: ContextKnobs
    streams: Sequence[str] | None
    slot: int
    last_global_id: int


def _replay_share(share: Share) -> list[list[CallFigure]]:
    out: list[list[list[CallFigure]]] = []

    async def main() -> None:  # the figures kept out of the main task, which asyncio.run formats at its end
        out.append(await _share(share))

    asyncio.run(main())
    return out[0]


async def _share(share: Share) -> list[list[CallFigure]]:
    def tick(fraction: float, _label: str) -> None:
        if _stop is not None and _stop.is_set():
            raise _Stopped
        _done[share.slot] = fraction

    reader = await open_reader(share.location)
    try:
        runs = profile_runs(share.profiles, share.recorded_knobs)
        calls = replay_profiles(reader, share.project, share.profiles, share.streams)
        await collect_calls(calls, runs, last_global_id=share.last_global_id, progress=tick, label="")
        return [run.calls for run in runs]
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
) -> list[ProfileRun]:
    """Every profile's run with its calls (in replay order), as `collect_calls` fills them in one
    process. The profiles are dealt round-robin to `workers` processes (spawned, so that a parent
    with threads, such as the dashboard, is never forked). `progress` is called every TICK_S with
    the mean fraction of the workers; if it raises, or the awaiting task is cancelled, the workers
    are told to stop and are waited for before the error propagates."""
    workers = max(1, min(workers, len(profiles)))
    shares = [list(range(slot, len(profiles), workers)) for slot in range(workers)]
    context = multiprocessing.get_context("spawn")
    done: SynchronizedArray[float] = context.Array("d", workers)
    stop = context.Event()
    label = profiles_label(profiles)
    runs = profile_runs(profiles, recorded_knobs)
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_init, initargs=(done, stop))
    futures: list[asyncio.Future[list[list[CallFigure]]]] = []
    try:
        futures += [
            asyncio.wrap_future(
                pool.submit(_replay_share, Share(location, project, [profiles[i] for i in share], recorded_knobs,
                                                 streams, slot, last_global_id))
            )
            for slot, share in enumerate(shares)
        ]  # fmt: skip
        pending: set[asyncio.Future[list[list[CallFigure]]]] = set(futures)
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
            for index, calls in zip(share, future.result(), strict=True):
                runs[index].calls = calls
        return runs
    except BaseException:
        stop.set()
        for future in futures:
            future.cancel()  # a worker's _Stopped is expected: not "an exception never retrieved"
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
