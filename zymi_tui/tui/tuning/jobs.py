"""Whole-store jobs of the tuning screens (comparison, sweep), run in a thread with their own event
loop and their own reader, so the screen stays live; a cancelled worker stops them at the next
progress tick."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from zymi_tui.events.location import StoreLocation
from zymi_tui.events.store import EventReader
from zymi_tui.replay.compare import Comparison, Profiles, compare_profiles, replay_profiles
from zymi_tui.replay.costs import load_prices
from zymi_tui.replay.figures import recorded_output
from zymi_tui.replay.store_replay import recorded_knobs
from zymi_tui.replay.sweep import Sweep, sweep
from zymi_tui.tui.store_job import with_reader

Tick = Callable[[float, str], object]


class Cancelled(Exception):
    """The screen cancelled the job."""


def _ticker(tick: Tick, cancelled: Callable[[], bool]) -> Callable[[float, str], None]:
    def progress(fraction: float, name: str) -> None:
        if cancelled():
            raise Cancelled
        tick(fraction, name)

    return progress


def run_comparison(
    store: StoreLocation,
    project: Path | None,
    profiles: Profiles,
    *,
    model: str | None,
    tick: Tick,
    cancelled: Callable[[], bool],
) -> Comparison:
    async def go(reader: EventReader) -> Comparison:
        return await compare_profiles(
            replay_profiles(reader, project, profiles), profiles, recorded_knobs=recorded_knobs(project),
            prices=load_prices(), model=model, output=await recorded_output(reader),
            last_global_id=await reader.max_global_id(), progress=_ticker(tick, cancelled),
        )  # fmt: skip

    return with_reader(store, go)


def run_sweep(
    store: StoreLocation,
    project: Path | None,
    windows: Sequence[int],
    soft_caps: Sequence[int],
    *,
    tick: Tick,
    cancelled: Callable[[], bool],
) -> Sweep:
    async def go(reader: EventReader) -> Sweep:
        base = recorded_knobs(project)
        return await sweep(
            reader, project, base, windows, soft_caps, recorded_knobs=base,
            last_global_id=await reader.max_global_id(), progress=_ticker(tick, cancelled), location=store,
        )  # fmt: skip

    return with_reader(store, go)
