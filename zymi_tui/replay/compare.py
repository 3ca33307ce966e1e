"""A whole store replayed under several profiles, side by side: per run stream and in total.

Every figure carries its provenance (`figures`: recorded, or estimated from the change in bytes).
Same trajectory assumed: the agent is taken to have made the same calls whatever its context was.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from zymi_tui.context.knobs import KNOB_NAMES, ContextKnobs
from zymi_tui.events.store import EventReader, run_of
from zymi_tui.replay.call_context import SAME_TRAJECTORY, CallContext, ClassCall
from zymi_tui.replay.costs import PriceTable, Pricing, pricing
from zymi_tui.replay.figures import (
    HEURISTIC_TOKENS_PER_BYTE,
    CallFigure,
    ProfileRun,
    RecordedOutput,
    calibrate,
    call_figures,
    figure_chars,
)
from zymi_tui.replay.store_ends import StoreEnds
from zymi_tui.replay.store_replay import Events, replay_groups
from zymi_tui.replay.tally import Tally, summarize

CAVEAT = SAME_TRAJECTORY + "; a different context changes what a model does: these figures isolate the policy"


def knob_dict(knobs: ContextKnobs) -> dict[str, int | None]:
    """The five knobs as a plain mapping (the form profiles, exports and sweeps work on)."""
    return {k: getattr(knobs, k) for k in KNOB_NAMES}


@dataclass
class Comparison:
    profiles: list[ProfileRun]
    tokens_per_byte: float
    tokens_ratio_source: str  # "calibrated on N recorded calls" | "heuristic 0.28"
    model: str | None
    price_entry: str | None
    output_tokens_recorded: int
    cache_family: str | None = None  # the price table's provider family the cache model used
    caveat: str = CAVEAT

    def runs(self) -> list[str]:
        seen: dict[str, None] = {}
        for p in self.profiles:
            seen.update(dict.fromkeys(p.per_run))
        return list(seen)

    def series(self, scope: str) -> dict[str, list[tuple[int, int]]]:
        """(sequence, chars) of every sent agent call of a step stream, or of all step streams of a run,
        per profile: the overlay plot."""

        def inside(stream: str) -> bool:
            return stream == scope or run_of(stream) == scope

        return {
            p.name: [(f.sequence, f.chars) for f in p.calls if inside(f.stream_id) and f.kind == "agent" and f.sent]
            for p in self.profiles
        }


# (indices of the profiles, a call they see alike: a row, or a lockstep class's figures of one)
ProfileCalls = AsyncIterator[tuple[Sequence[int], CallContext | ClassCall]]
Progress = Callable[[float, str], Awaitable[None] | None]  # (fraction of the whole job done, what is running)


Profiles = Sequence[tuple[str, ContextKnobs | None]]  # (name, knobs); None: the recorded knobs


def replay_profiles(
    reader: EventReader,
    project: Path | None,
    profiles: Profiles,
    streams: Sequence[str] | None = None,
    events: Events | None = None,
    ends: StoreEnds | None = None,
) -> ProfileCalls:
    """The profiles' calls, for `collect_calls` (which reads their figures only); `events`: see `replay_many`;
    `ends`: see `replay_groups`."""
    knobs = [k for _, k in profiles]
    return replay_groups(
        reader, project=project, knobs=knobs, streams=streams, figures_only=True, events=events, ends=ends
    )


async def compare_profiles(
    calls: ProfileCalls,
    profiles: Profiles,
    *,
    recorded_knobs: ContextKnobs,
    prices: PriceTable | None = None,
    model: str | None = None,
    provider: str | None = None,
    output: RecordedOutput | None = None,
    last_global_id: int = 0,
    progress: Progress | None = None,
) -> Comparison:
    """Compare the profiles (`None` knobs = the recorded ones) from their replayed `calls`
    (see `replay_profiles`). `progress(fraction, label)` is called every 500 calls, the fraction
    measured by global id against `last_global_id`; it may raise to stop the replay, as may
    cancelling the awaiting task."""
    runs = profile_runs(profiles, recorded_knobs)
    await collect_calls(calls, runs, last_global_id=last_global_id, progress=progress, label=profiles_label(profiles))
    return finish(runs, prices=prices, model=model, provider=provider, output=output)


def profile_runs(profiles: Profiles, recorded_knobs: ContextKnobs) -> list[ProfileRun]:
    """One empty `ProfileRun` per profile, with its effective knobs."""
    runs: list[ProfileRun] = []
    for name, knobs in profiles:
        effective = knob_dict(recorded_knobs if knobs is None else knobs)
        runs.append(ProfileRun(name, effective, recorded=effective == knob_dict(recorded_knobs)))
    return runs


def profiles_label(profiles: Profiles) -> str:
    return ", ".join(name for name, _ in profiles) if len(profiles) <= 4 else f"{len(profiles)} profiles"


async def collect_calls(
    calls: ProfileCalls,
    runs: list[ProfileRun],
    *,
    last_global_id: int,
    progress: Progress | None,
    label: str,
    take: Callable[[int, list[CallFigure]], None] | None = None,
    take_shared: Callable[[list[int], CallContext | ClassCall, int], None] | None = None,
) -> None:
    """Append each replayed call's figures to its profiles' runs (or give them to `take(index of the
    profile, figures)`, profile by profile, or to `take_shared(indices of the profiles, the call, their
    soft cap)`, once for all the profiles that share its figures); `progress` every 500 calls of a profile
    (not with `take_shared`).

    A row given to several profiles (`replay_groups(figures_only=True)` shares it among the knob sets
    of one lockstep class) gets one list of figures per side of the soft cap, shared by those
    profiles: `summarize` fills the same values into them for each (same tokens per byte, and the
    same earlier calls of the stream before them, as they shared the stream's rows from its start)."""
    soft_caps = [int(run.knobs["soft_cap_chars"] or 0) for run in runs]
    done = 0
    previous: CallContext | ClassCall | None = None
    shared: dict[bool, list[CallFigure]] = {}
    async for members, call in calls:
        chars, foreign = figure_chars(call), call.foreign
        if take_shared is not None:
            sides: dict[bool, list[int]] = {}
            for index in members:
                sides.setdefault(chars > soft_caps[index], []).append(index)
                if foreign:
                    runs[index].foreign = True
            for indices in sides.values():
                take_shared(indices, call, soft_caps[indices[0]])
            continue
        if call is not previous:
            previous, shared = call, {}
        for index in members:
            over = chars > soft_caps[index]
            if foreign:
                runs[index].foreign = True
            figures = shared.get(over)
            if figures is None:
                figures = shared[over] = call_figures(call, soft_caps[index])
            if take is None:
                runs[index].calls += figures
            else:
                take(index, figures)
            done += 1
            if progress is not None and done % 500 == 0:
                fraction = min(1.0, call.global_id / last_global_id) if last_global_id else 0.0
                maybe = progress(fraction, label)
                if maybe is not None:
                    await maybe


def finish(
    runs: list[ProfileRun],
    *,
    prices: PriceTable | None,
    model: str | None,
    provider: str | None,
    output: RecordedOutput | None,
) -> Comparison:
    """Calibrate tokens on the recorded profile (else the first), then total and price every run."""
    basis = basis_index(runs)
    ratio, source = calibrate(runs[basis].calls) if basis is not None else (HEURISTIC_TOKENS_PER_BYTE, "heuristic")
    how = pricing(prices, model, provider)
    for run in runs:
        summarize(run, ratio, how.price, output or RecordedOutput(), how.cache_family)
    return comparison_of(how, runs, ratio, source, model, output)


def basis_index(runs: Sequence[ProfileRun]) -> int | None:
    """The run whose recorded calls calibrate tokens per byte: the recorded profile, else the first."""
    return next((i for i, r in enumerate(runs) if r.recorded), 0 if runs else None)


def tally_for(how: Pricing, ratio: float, *, per_run: bool = True) -> Tally:
    """A running tally of calls priced as `how` says."""
    return Tally(ratio, how.cache_family, per_run=per_run)


def close_tally(how: Pricing, tally: Tally, run: ProfileRun, output: RecordedOutput | None) -> None:
    tally.close(run, how.price, output or RecordedOutput())


def comparison_of(
    how: Pricing, runs: list[ProfileRun], ratio: float, source: str, model: str | None, output: RecordedOutput | None
) -> Comparison:
    """The comparison of `runs`, each already summarized, priced as `how` says."""
    return Comparison(
        runs, ratio, source, model, how.price_entry, sum((output or RecordedOutput()).agent_by_run.values()),
        cache_family=how.family[0] if how.family else None,
    )  # fmt: skip


def price_note(cmp: Comparison) -> str:
    """How the comparison was priced, for a person."""
    if cmp.price_entry:
        return f"{cmp.model} priced as {cmp.price_entry}"
    if cmp.model is None:
        return "no price (model unknown; pass --model)"
    return f"no price for {cmp.model} (add it to prices.yml)"
