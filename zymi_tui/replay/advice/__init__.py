"""`advise`: what to change, read off a store, its project and a replay.

Each finding has a stable `signal` id, the evidence (calls, figures, the replay's own counts) and, where
a knob is the lever, a search along it: every candidate replayed on this store (the same comparison
`zymi-tui compare` makes) and judged on one objective (cost with cache when the model has a price, else
input tokens sent; hard-cap failures a constraint) against keeping the current knobs. A candidate that is
not better, or changes nothing measurable, is dropped; when none wins the finding says there is nothing to
change. Signals whose fix is not a knob (tools, the provider) say so and give the figure instead.

model: the findings and the objective · signals, signals_tools, signals_cache: the detectors · search: the
candidates and the verdict · run: the two passes · report: JSON, Markdown and the printed lines.
"""

from zymi_tui.replay.advice.model import Advice, Baseline, Effect, Finding, Objective, Recommendation, profile_name
from zymi_tui.replay.advice.report import (
    effect_line,
    head_lines,
    json_parts,
    markdown_parts,
    recommendation_lines,
    to_json,
    to_markdown,
    tradeoff_line,
)
from zymi_tui.replay.advice.run import advise

__all__ = [
    "Advice",
    "Baseline",
    "Effect",
    "Finding",
    "Objective",
    "Recommendation",
    "advise",
    "effect_line",
    "head_lines",
    "json_parts",
    "markdown_parts",
    "profile_name",
    "recommendation_lines",
    "to_json",
    "to_markdown",
    "tradeoff_line",
]
