"""The level plan of a pipeline's steps: Kahn's algorithm by levels, ids sorted within a level."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec


class Levels(msgspec.Struct, frozen=True):
    """`plan[i]` are the steps of level i; `cycle` the steps that never became ready (a dependency cycle)."""

    plan: list[list[str]]
    cycle: list[str]

    def of(self) -> dict[str, int]:
        """Each step's level; steps in a cycle get the level after the last."""
        out = {sid: i for i, level in enumerate(self.plan) for sid in level}
        out.update(dict.fromkeys(self.cycle, len(self.plan)))
        return out


def step_levels(depends_on: Mapping[str, Iterable[str]]) -> Levels:
    """Levels are barriers: a step waits for every step of the previous level. Unknown deps are ignored."""
    ids = list(depends_on)
    known = set(ids)
    deps = {sid: {d for d in depends_on[sid] if d in known} for sid in ids}
    done: set[str] = set()
    plan: list[list[str]] = []
    remaining = ids
    while remaining:
        level = sorted(sid for sid in remaining if deps[sid] <= done)
        if not level:
            return Levels(plan, sorted(remaining))
        plan.append(level)
        done.update(level)
        remaining = [sid for sid in remaining if sid not in done]
    return Levels(plan, [])
