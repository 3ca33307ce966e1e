"""Several profiles replayed over a store, in this process or on a process pool: the one entry
`compare`, `sweep` (and the screens' jobs through them) go through, so both give the same figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from zymi_tui.context.knobs import ContextKnobs
from zymi_tui.cores import usable_cores
from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.replay.compare import Comparison, Profiles, Progress, compare_profiles, replay_profiles
from zymi_tui.replay.costs import PriceTable, pricing
from zymi_tui.replay.figures import RecordedOutput
from zymi_tui.replay.sweep_pool import replay_on_pool

POOL_MIN_EVENTS = 20_000  # below this, starting the worker processes (~1-3 s) costs more than they save
# `compare` and `advise` replay in one pass in this process what a pool decodes again (and `advise` has
# its first pass's events decoded already): on a shared 2-core machine (load 4-10) the pool was slower
# at 100k events (advise 6.1 -> 10.6 s, compare 2.5 -> 3.3 s) and at 1M faster or even in wall time
# with 35-50% less memory (compare 46 -> 39 s, 197 -> 113 MB; advise on one long run 4.4 -> 2.3 GB);
# `advise` now replays in this process unless asked (advice/run.py ADVISE_WORKERS) and from this size
# reads the store again for its second pass (171 MB)
WHATIF_POOL_MIN_EVENTS = 500_000


def pool_workers(last_global_id: int, workers: int | None = None, pool_from: int = POOL_MIN_EVENTS) -> int:
    """How many processes replay the profiles: `workers` if given, else one per usable core on a
    store of `pool_from` events or more, else 1 (this process)."""
    if workers is not None:
        return workers
    return usable_cores() if last_global_id >= pool_from else 1


async def compare_store(
    reader: EventReader,
    project: Path | None,
    profiles: Profiles,
    *,
    recorded_knobs: ContextKnobs,
    streams: Sequence[str] | None = None,
    last_global_id: int = 0,
    progress: Progress | None = None,
    prices: PriceTable | None = None,
    model: str | None = None,
    provider: str | None = None,
    output: RecordedOutput | None = None,
    location: StoreLocation | None = None,
    workers: int | None = None,
    per_run: bool = True,
    pool_from: int = POOL_MIN_EVENTS,
) -> Comparison:
    """The profiles compared (`compare_profiles`): with the store's `location` and more than one worker
    (see `pool_workers`; `pool_from`: the store size from which it defaults to one per core), on a
    process pool (`replay_on_pool`: each profile's totals, and per run if `per_run`, but no per-call
    figures); otherwise in this process, with every call's figures."""
    workers = pool_workers(last_global_id, workers, pool_from)
    if location is not None and workers > 1 and len(profiles) > 1:
        how = pricing(prices, model, provider)
        return await replay_on_pool(
            location, project, profiles, recorded_knobs=recorded_knobs, streams=streams, workers=workers,
            last_global_id=last_global_id, progress=progress, pricing=how, model=model, output=output,
            per_run=per_run,
        )  # fmt: skip
    return await compare_profiles(
        replay_profiles(reader, project, profiles, streams), profiles, recorded_knobs=recorded_knobs,
        last_global_id=last_global_id, progress=progress, prices=prices, model=model, provider=provider,
        output=output,
    )  # fmt: skip
