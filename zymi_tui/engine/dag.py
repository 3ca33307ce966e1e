"""The level plan of a pipeline (src/config/dag.rs): Kahn's algorithm by levels, ids sorted in a level."""

from __future__ import annotations

from zymi_tui.engine.config import PipelineConfig
from zymi_tui.project.errors import ProjectError
from zymi_tui.project.levels import step_levels


def plan_levels(pipeline: PipelineConfig) -> list[list[str]]:
    """Levels are barriers: a step waits for every step of the previous level. Unknown deps are ignored."""
    levels = step_levels({s.id: s.depends_on for s in pipeline.steps})
    if levels.cycle:
        raise ProjectError(f"cycle detected in pipeline `{pipeline.name}` steps: {' -> '.join(levels.cycle)}")
    return levels.plan
