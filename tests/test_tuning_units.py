"""Pure parts of the tuning features, on hand-made inputs with hand-computed answers."""

from __future__ import annotations

import pytest

from zymi_tui.context.knobs import ContextKnobs, make_knobs
from zymi_tui.context.rendered import RenderedContext
from zymi_tui.replay.call_context import CallContext
from zymi_tui.replay.costs import parse_prices
from zymi_tui.replay.figures import ProfileRun, RecordedOutput, calibrate, call_figures
from zymi_tui.replay.sweep import SweepError, grid_profiles, pareto_front, parse_values
from zymi_tui.replay.tally import summarize
from zymi_tui.tui.tuning.curve_view import plot_dots

KNOBS: dict[str, int | None] = {
    "observation_window": 10,
    "soft_cap_chars": 1000,
    "hard_cap_chars": 2000,
    "min_tail_turns": 4,
    "forget_after_turns": None,
}


def call(
    stream: str, seq: int, recorded: int, tokens: int | None, chars: int, *, compaction: bool = False,
    simulated: bool = False, over_hard: bool = False, failed_build: bool = False,
) -> CallContext:  # fmt: skip
    rendered = RenderedContext(chars, 3, None, over_hard, ContextKnobs(), {})
    return CallContext(stream, seq, seq + 100, 0 if compaction else 1, compaction, recorded, 3, tokens, rendered,
                       False, hard_cap_failure=failed_build, simulated=simulated)  # fmt: skip


def test_parse_values() -> None:
    assert parse_values("2,4,6", "window") == [2, 4, 6]
    assert parse_values("2-10:4,3", "window") == [2, 3, 6, 10]
    assert parse_values("40k,1m", "soft-cap") == [40000, 1000000]
    with pytest.raises(SweepError, match="--window 'x'"):
        parse_values("x", "window")
    with pytest.raises(SweepError, match="STOP >= START"):
        parse_values("9-3", "window")


def test_pareto_front_minimises_both() -> None:
    # (total, peak): (1,9) (5,5) (9,1) are the front; (6,6) is dominated by (5,5); the duplicate (5,5) too stays
    pts = [(1.0, 9.0), (5.0, 5.0), (6.0, 6.0), (9.0, 1.0), (5.0, 5.0)]
    assert pareto_front(pts) == [True, True, False, True, True]


def test_grid_raises_hard_cap_to_soft_cap() -> None:
    grid = grid_profiles(make_knobs(KNOBS, "test"), [2, 4], [500, 3000])
    assert [name for name, _ in grid] == ["w2/s500", "w2/s3000", "w4/s500", "w4/s3000"]
    hard = [k.hard_cap_chars if k is not None else None for _, k in grid]
    assert hard[1] == 3000 and hard[0] == 2000


def test_figures_tokens_and_cost_by_hand() -> None:
    calls = [
        call("run-1:step:a", 2, 400, 100, 400),  # unchanged: recorded 100 tokens
        call("run-1:step:a", 5, 1200, 300, 800),  # what-if smaller: 300 + (800-1200)*r
        call("run-1:step:a", 7, 0, None, 100, compaction=True, simulated=True),  # a summary the recording never had
        call("run-1:step:a", 8, 1500, None, 1500),
        call("run-2:step:a", 2, 2500, 600, 2500, over_hard=True),  # what-if fails the hard cap: not sent
        call("run-2:step:a", 9, 0, None, 900, failed_build=True),  # recorded failed build that now fits: no call
    ]
    run = ProfileRun("p", KNOBS, recorded=False)
    for c in calls:
        run.calls += call_figures(c, 1000)
    assert [f.kind for f in run.calls] == ["agent", "agent", "simulated summary", "agent", "agent"]
    ratio, source = calibrate(run.calls)
    # recorded calls with usage: (400,100) (1200,300) (2500,600) -> 1000 / 4100
    assert ratio == pytest.approx(1000 / 4100) and source == "calibrated on 3 recorded call(s)"
    table = parse_prices("per_tokens: 1000\nmodels:\n  m: {input: 1, output: 2}\n", "t")
    output = RecordedOutput({"run-1": 50, "run-2": 10}, summary_tokens=0, summary_calls=0)
    summarize(run, 0.25, (table, table.models["m"]), output)
    t = run.total
    # tokens: 100 (recorded) + 200 (300 - 400*0.25) + 25 (100 bytes *0.25, summary) + 375 (1500*0.25)
    assert (t.calls, t.agent_calls, t.tokens_sum, t.tokens_peak) == (4, 3, 700, 375)
    assert (t.chars_sum, t.chars_peak, t.over_soft_cap) == (2800, 1500, 1)
    assert (t.compactions_simulated, t.hard_cap_failures, t.provenance) == (1, 1, "estimated")
    # cost: 700 input tokens at 1/1000 + (60 recorded output + 256 guessed for the summary) at 2/1000
    assert t.cost is not None and t.cost.total == pytest.approx(0.7 + 316 * 0.002)
    assert t.cost_estimated
    assert run.per_run["run-2"].hard_cap_failures == 1 and run.per_run["run-2"].calls == 0


def test_the_curve_in_braille_dots() -> None:
    """One row of two cells is 4 x 4 dots: a value per dot column, 0 at the bottom and `top` at the
    top; each column joins its value and the one before (a line); a failed call (None) leaves a gap."""
    up = plot_dots([0, 1, 2, 3], 4, 3.0, 2, 1)
    # dot columns 0..3 join (0), (0..1), (1..2), (2..3): dot rows 3, 2-3, 1-2, 0-1 (row 0 is the top);
    # a cell's left column is bits 0x01 0x02 0x04 0x40 from the top, its right one 0x08 0x10 0x20 0x80
    assert up == [[0x40 | 0x20 | 0x80, 0x02 | 0x04 | 0x08 | 0x10]]
    assert "".join(chr(0x2800 | bits) for bits in up[0]) == "⣠⠞"  # a rising line
    assert plot_dots([3, None, 3, 3], 4, 3.0, 2, 1) == [[0x01, 0x01 | 0x08]]
    assert plot_dots([3, 3, 3, 3], 2, 3.0, 2, 1) == [[0x01 | 0x08, 0]]  # only the calls known so far
