"""A redraw of the context plot holds a few bytes a call beyond the calls themselves: its title names the newest
call without making every call a `CallPoint`, and its curves are read from the columns (issue 34: on long_1m's
149,425 calls each redraw made ~52 MB of objects, and the dashboard redraws as the calls are read). The title
and the call an events row picks are checked against the calls as this test made them."""

from __future__ import annotations

import random
import tracemalloc

from textual.app import App, ComposeResult

from zymi_tui.tui.plot import ContextPlot
from zymi_tui.tui.state.call_columns import CallColumns
from zymi_tui.tui.state.plot import StepCalls

CALLS = 20_000  # per step, two steps


def _made(seed: int) -> tuple[dict[str, StepCalls], list[tuple[int, int, str, int, int, int, int | None]]]:
    """Two steps' calls, their times interleaved (some equal across the steps), and the same calls as tuples
    (ns, gid, step, index, chars, messages, input tokens): what the plot is asked to show, known here."""
    rng = random.Random(seed)
    steps = {name: StepCalls(name, CallColumns()) for name in ("alpha", "beta")}
    made = []
    gid = 1000
    for i in range(CALLS):
        for name, sc in steps.items():
            gid += rng.randint(1, 5)
            ns = 1_000_000_000 * i + (0 if rng.random() < 0.3 else rng.randint(0, 999))  # ties across the steps
            chars, messages = rng.randint(100, 90_000), rng.randint(1, 60)
            index = sc.calls.append(ns, chars, messages, 1 + i % 30, gid, f"run.{name}", 2 * i + 1)
            tokens = None if rng.random() < 0.2 else rng.choice([0, rng.randint(10, 30_000)])
            sc.calls.set_tokens(index, tokens)
            made.append((ns, gid, name, index, chars, messages, tokens))
    return steps, made


class _PlotApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ContextPlot(id="plot")


async def test_a_redraw_holds_a_few_bytes_a_call_and_names_the_newest_call() -> None:
    steps, made = _made(7)
    app = _PlotApp()
    async with app.run_test(size=(120, 40)) as pilot:
        plot = app.query_one(ContextPlot)
        await pilot.pause()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            plot.set_data(steps, 0)
            per_call = (tracemalloc.get_traced_memory()[1] - before) / len(made)
        finally:
            tracemalloc.stop()
        # every call made a CallPoint (and sorted) for the title, and a float, a tuple and a list slot a call
        # for each curve: ~350 bytes a call before; float arrays and the newest call found on the columns: ~40
        assert per_call < 100, f"{per_call:.0f} bytes a call"
        ns, gid, step, index, chars, messages, tokens = max(made[::-1], key=lambda c: (c[0], c[1]))
        shown_tokens = "" if tokens is None else f", {tokens:,} tok"
        title = f"Context · last #{index}: {chars:,} ch{shown_tokens}, {messages} msgs · all steps: {len(made)} calls"
        assert plot.border_title == title
        last = plot.last_call()
        assert last is not None and (last.global_id, last.stream_id, last.index) == (gid, f"run.{step}", index)
        for ns, gid, step, index, *_ in random.Random(3).sample(made, 50):
            call = plot.call_of(gid)
            assert call is not None and (call.ns, call.global_id, call.index, call.stream_id) == (
                ns,
                gid,
                index,
                f"run.{step}",
            )
        assert plot.call_of(999) is None
        plot.step = "alpha"  # one step shown: the newest of its calls
        plot.replot()
        newest = max((c for c in made[::-1] if c[2] == "alpha"), key=lambda c: (c[0], c[1]))
        assert plot.border_title.startswith(f"Context · last #{newest[3]}: {newest[4]:,} ch")
        beta = next(c for c in made if c[2] == "beta")
        assert plot.call_of(beta[1]) is None  # a step not shown has no call picked


async def test_equal_times_and_ids_name_the_last_call_as_a_sort_leaves_it() -> None:
    """Calls of equal (time, id) (a hostile store's): the one the stable sort of every call puts last."""
    steps = {name: StepCalls(name, CallColumns()) for name in ("a", "b")}
    for name, chars in (("a", 111), ("b", 222)):
        for k in range(3):
            steps[name].calls.append(5, chars + k, 1, 1, 9, f"s.{name}", k)
    app = _PlotApp()
    async with app.run_test(size=(120, 40)) as pilot:
        plot = app.query_one(ContextPlot)
        await pilot.pause()
        plot.set_data(steps, 0)
        last = plot.last_call()
        assert last is not None and (last.stream_id, last.index, last.chars) == ("s.b", 3, 224)
        assert "last #3: 224 ch" in str(plot.border_title)
