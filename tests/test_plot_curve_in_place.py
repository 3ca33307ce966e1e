"""The context plot's curves are read from the calls' columns in place: a redraw makes a number only for a call
it draws (issue 34: long_1m's 149,425 calls as a list of floats and four float arrays took ~10 MB at every
redraw, and the last redraw set the dashboard's peak RSS at a million events). What is drawn is checked against
the calls as this test made them."""

from __future__ import annotations

import random
import tracemalloc

from textual.app import App, ComposeResult

from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.state.call_columns import CallColumns
from zymi_tui.tui.state.plot import StepCalls, curve

CALLS = 30_000  # per step, two steps


def _made(seed: int) -> tuple[dict[str, StepCalls], dict[str, list[tuple[int, int, int | None]]]]:
    """Two steps' calls, and the same calls as (ns, chars, input tokens) per step, known here."""
    rng = random.Random(seed)
    steps = {name: StepCalls(name, CallColumns()) for name in ("alpha", "beta")}
    made: dict[str, list[tuple[int, int, int | None]]] = {name: [] for name in steps}
    for i in range(CALLS):
        for name, sc in steps.items():
            ns, chars = 1_000_000_000 * i + rng.randint(0, 999), rng.randint(100, 90_000)
            index = sc.calls.append(ns, chars, 3, 1, 10 * i + len(made[name]), f"run.{name}", i + 1)
            tokens = None if rng.random() < 0.2 else rng.choice([0, rng.randint(10, 30_000)])
            sc.calls.set_tokens(index, tokens)
            made[name].append((ns, chars, tokens))
    return steps, made


class _PlotApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ContextPlot(id="plot")


async def test_a_redraw_makes_no_number_a_call() -> None:
    steps, made = _made(5)
    calls = sum(len(m) for m in made.values())
    app = _PlotApp()
    async with app.run_test(size=(120, 40)) as pilot:
        plot = app.query_one(ContextPlot)
        await pilot.pause()
        plot.set_data(steps, 0)  # (plotext's figure made and its first curves drawn)
        for by_time in (False, True):
            plot.by_time = by_time
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                plot.replot()
                per_call = (tracemalloc.get_traced_memory()[1] - before) / calls
            finally:
                tracemalloc.stop()
            # a float object and a list slot a call for x, float arrays of x and chars, and of the calls with
            # tokens: 32.5 bytes a call before (measured at 30,000 calls a step); now the places of the calls
            # with tokens (4 bytes each of ~60% of the calls): 2.7
            assert per_call < 8, f"{per_call:.1f} bytes a call (by time: {by_time})"


def test_the_curve_is_the_calls_own_points_with_each_bucket_s_spikes() -> None:
    steps, made = _made(11)
    for name, sc in steps.items():
        calls = made[name]
        for by_time, t0 in ((False, 0), (True, calls[0][0] - 7)):
            drawn = curve(sc.calls, by_time, t0, 240)
            x_of = [(ns - t0) / 1e9 if by_time else float(i + 1) for i, (ns, _, _) in enumerate(calls)]
            points = dict(zip(x_of, (float(c) for _, c, _ in calls), strict=True))
            assert 2 < len(drawn.xs) <= 240 and drawn.xs == sorted(drawn.xs)
            assert all(points[x] == y for x, y in zip(drawn.xs, drawn.ys, strict=True))
            assert max(c for _, c, _ in calls) in drawn.ys and min(c for _, c, _ in calls) in drawn.ys
            known = [(x, float(t)) for x, (_, _, t) in zip(x_of, calls, strict=True) if t]
            assert 2 < len(drawn.token_xs) <= 240
            assert set(zip(drawn.token_xs, drawn.token_ys, strict=True)) <= set(known)
            assert max(t for _, t in known) in drawn.token_ys and min(t for _, t in known) in drawn.token_ys
            assert (drawn.x_lo, drawn.x_hi, drawn.top) == (min(x_of), max(x_of), max(points.values()))
