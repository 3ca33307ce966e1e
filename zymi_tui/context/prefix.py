"""Layer A from a project: the minimal, read-only part of zymi's loader that the prefix needs.

Reads `agents/*.yml` (name, system_prompt) and `pipelines/*.yml` (name, inputs, steps: id,
agent, task, depends_on, context.mode) as plain dicts, after zymi's load-time templating
(`${env.X}`, `${project.name}`, `${project.version}`, `variables:`). The engine's full loader
lives elsewhere; this module only resolves prefixes (docs/engine.md#templating, docs/engine.md#agent-step).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from zymi_tui.context.builder import Prefix
from zymi_tui.context.masking import floor_bytes

_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")
TEMPLATE_OUTPUT_BYTES = 2000


class ProjectError(ValueError):
    """A project folder that cannot be read; the message is one line."""


@dataclass(frozen=True)
class StepSpec:
    id: str
    agent: str | None
    task: str | None
    depends_on: tuple[str, ...] = ()
    fresh: bool = False


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    optional_inputs: tuple[str, ...]
    steps: dict[str, StepSpec]
    levels: dict[str, int] = field(default_factory=dict)


def _load_yaml(path: Path, variables: dict[str, str]) -> Any:
    text = path.read_text(encoding="utf-8")

    def sub(m: re.Match[str]) -> str:
        key = m.group(1).strip()
        if key.startswith("env."):
            return os.environ.get(key[4:], m.group(0))
        return variables.get(key, m.group(0))

    lines = [line if line.lstrip().startswith("#") else _PLACEHOLDER.sub(sub, line) for line in text.splitlines(True)]
    try:
        return yaml.safe_load("".join(lines))
    except yaml.YAMLError as e:
        raise ProjectError(f"{path}: invalid YAML: {str(e).splitlines()[0]}") from None


def _yml_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())


def _levels(steps: dict[str, StepSpec]) -> dict[str, int]:
    """Kahn levels (docs/engine.md#dag-levels): a step's level is 1 + its deepest known dependency's."""
    levels: dict[str, int] = {}

    def level(sid: str, seen: frozenset[str]) -> int:
        if sid in levels:
            return levels[sid]
        deps = [d for d in steps[sid].depends_on if d in steps and d not in seen]
        value = 1 + max((level(d, seen | {sid}) for d in deps), default=-1)
        levels[sid] = value
        return value

    for sid in steps:
        level(sid, frozenset())
    return levels


class ProjectPrefixes:
    """Resolves Layer A for a (pipeline, step) of a run from the project's YAML files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        project = root / "project.yml"
        if not project.is_file():
            raise ProjectError(f"{root}: no project.yml there (pass --project DIR, the folder that holds it)")
        try:
            doc = yaml.safe_load(project.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ProjectError(f"{project}: cannot read it: {str(e).splitlines()[0]}") from None
        variables = {str(k): str(v) for k, v in (doc.get("variables") or {}).items()}
        variables["project.name"] = str(doc.get("name", ""))
        if doc.get("version") is not None:
            variables["project.version"] = str(doc["version"])
        self.agents: dict[str, str] = {}
        self.agent_tools: dict[str, tuple[str, ...]] = {}  # the tools each agent is given
        for path in _yml_files(root / "agents"):
            agent = _load_yaml(path, variables)
            if isinstance(agent, dict) and "name" in agent:
                name = str(agent["name"])
                self.agent_tools[name] = tuple(str(t) for t in agent.get("tools") or [])
                prompt = agent.get("system_prompt")
                self.agents[name] = str(prompt) if prompt is not None else f"You are the '{name}' agent."
        self.pipelines: dict[str, PipelineSpec] = {}
        for path in _yml_files(root / "pipelines"):
            pipe = _load_yaml(path, variables)
            if isinstance(pipe, dict) and "name" in pipe:
                self.pipelines[str(pipe["name"])] = self._pipeline(pipe)

    @staticmethod
    def _pipeline(doc: dict[str, Any]) -> PipelineSpec:
        steps: dict[str, StepSpec] = {}
        for s in doc.get("steps") or []:
            if not isinstance(s, dict) or "id" not in s:
                continue
            ctx = s.get("context") if isinstance(s.get("context"), dict) else {}
            sid = str(s["id"])
            steps.setdefault(
                sid,
                StepSpec(
                    id=sid,
                    agent=None if s.get("agent") is None else str(s["agent"]),
                    task=None if s.get("task") is None else str(s["task"]),
                    depends_on=tuple(str(d) for d in s.get("depends_on") or []),
                    fresh=str((ctx or {}).get("mode", "inherit")) == "fresh",
                ),
            )
        optional = tuple(
            str(i["name"]) for i in doc.get("inputs") or [] if isinstance(i, dict) and not i.get("required", False)
        )
        return PipelineSpec(str(doc["name"]), optional, steps, _levels(steps))

    def step(self, pipeline: str, step_id: str) -> StepSpec | None:
        spec = self.pipelines.get(pipeline)
        return spec.steps.get(step_id) if spec else None

    def prefix(self, pipeline: str, step_id: str, inputs: dict[str, str], outputs: dict[str, str]) -> Prefix | None:
        """Layer A of this step in a run with these inputs and earlier steps' outputs (None: unknown step)."""
        spec = self.pipelines.get(pipeline)
        step = spec.steps.get(step_id) if spec else None
        if spec is None or step is None or step.agent is None:
            return None
        system = self.agents.get(step.agent, f"You are the '{step.agent}' agent.")
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


def find_project(store_path: str, explicit: Path | None) -> Path | None:
    """`--project DIR`, else the folder holding `<root>/.zymi/events.db` if it has a project.yml."""
    if explicit is not None:
        return explicit
    db = Path(store_path).resolve()
    if db.parent.name == ".zymi" and (db.parent.parent / "project.yml").is_file():
        return db.parent.parent
    if (db.parent / "project.yml").is_file():
        return db.parent
    return None
