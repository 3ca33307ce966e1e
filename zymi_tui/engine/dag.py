"""The level plan of a pipeline (src/config/dag.rs): Kahn's algorithm by levels, ids sorted in a level."""

from __future__ import annotations

from zymi_tui.engine.config import PipelineConfig


def plan_levels(pipeline: PipelineConfig) -> list[list[str]]:
    """Levels are barriers: a step waits for every step of the previous level. Unknown deps are ignored."""
    ids = [s.id for s in pipeline.steps]
    known = set(ids)
    deps = {s.id: {d for d in s.depends_on if d in known} for s in pipeline.steps}
    done: set[str] = set()
    levels: list[list[str]] = []
    remaining = list(dict.fromkeys(ids))
    while remaining:
        level = sorted(sid for sid in remaining if deps[sid] <= done)
        if not level:
            from zymi_tui.engine.loader import ProjectError

            raise ProjectError(f"cycle detected in pipeline `{pipeline.name}` steps: {' -> '.join(sorted(remaining))}")
        levels.append(level)
        done.update(level)
        remaining = [sid for sid in remaining if sid not in done]
    return levels
