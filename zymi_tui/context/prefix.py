"""Layer A from a project: each agent step's system prompt and task, as the engine renders them.

The project is read by zymi_tui.project.reader (agents' prompts, pipelines' steps, levels and
optional inputs); this module only fills in a run's inputs and earlier steps' outputs.
"""

from __future__ import annotations

from zymi_tui.context.masking import floor_bytes
from zymi_tui.context.rendered import Prefix
from zymi_tui.project.errors import ProjectError
from zymi_tui.project.reader import Project, StepSpec

TEMPLATE_OUTPUT_BYTES = 2000


class ProjectPrefixes:
    """Resolves Layer A for a (pipeline, step) of a run from a project's agents and pipelines."""

    def __init__(self, project: Project) -> None:
        if project.problems:
            raise ProjectError(next(iter(project.problems.values())))
        self.project = project

    def step(self, pipeline: str, step_id: str) -> StepSpec | None:
        spec = self.project.pipelines.get(pipeline)
        return spec.steps.get(step_id) if spec else None

    def prefix(self, pipeline: str, step_id: str, inputs: dict[str, str], outputs: dict[str, str]) -> Prefix | None:
        """Layer A of this step in a run with these inputs and earlier steps' outputs (None: unknown step)."""
        spec = self.project.pipelines.get(pipeline)
        step = spec.steps.get(step_id) if spec else None
        if spec is None or step is None or step.agent is None:
            return None
        system = self.project.system_prompt(step.agent)
        values = dict(inputs)
        for name in spec.optional_inputs:
            values.setdefault(name, "")
        task = step.task or ""
        for key, value in values.items():
            task = task.replace(f"${{inputs.{key}}}", value)
        level = spec.levels.get(step_id, 0)
        earlier = {k: v for k, v in outputs.items() if spec.levels.get(k, -1) < level}
        for key, value in earlier.items():
            task = task.replace(f"${{steps.{key}.output}}", floor_bytes(value, TEMPLATE_OUTPUT_BYTES))
        context = "".join(
            f"## Output from step '{dep}':\n{earlier[dep]}\n\n" for dep in step.depends_on if dep in earlier
        )
        user = f"{task}\n\n---\nContext from previous steps:\n{context}" if context else task
        return Prefix(system_prompt=system, task=user)
