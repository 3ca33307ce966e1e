"""The lenient reader of a project: what `project.yml`, `agents/` and `pipelines/` say, as plain data.

Lenient means: unknown keys are ignored, an unresolved `${...}` stays as written, and a broken
agent or pipeline file is recorded in `problems` (its path -> one line) instead of stopping the
read. Only a missing or unreadable `project.yml` is a `ProjectError`. The engine's validating
loader (zymi_tui.engine.loader) is stricter and reads the same files through this package's
`yamlfile` and `templating` modules.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import msgspec

from zymi_tui.project.errors import ProjectError
from zymi_tui.project.levels import step_levels
from zymi_tui.project.templating import resolve_full
from zymi_tui.project.yamlfile import parse_yaml, read_text, yaml_files

PROJECT_FILE = "project.yml"
_ENV = re.compile(r"\$\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}")


class StepSpec(msgspec.Struct, frozen=True):
    id: str
    agent: str | None
    task: str | None
    depends_on: tuple[str, ...] = ()
    fresh: bool = False  # `context: {mode: fresh}`
    what: str = "—"  # "agent: coder" | "tool: say" | "ask: human"


class PipelineSpec(msgspec.Struct, frozen=True):
    name: str
    path: Path
    optional_inputs: tuple[str, ...]
    steps: dict[str, StepSpec]
    levels: dict[str, int] = msgspec.field(default_factory=dict)
    problem: str | None = None  # why its graph cannot be drawn (no steps, a step without an id)


class Project(msgspec.Struct, frozen=True):
    root: Path
    doc: dict[str, Any]  # project.yml as written (no templating)
    agents: dict[str, str]  # agent name -> system prompt
    agent_tools: dict[str, tuple[str, ...]]  # agent name -> the tools it is given
    pipelines: dict[str, PipelineSpec]
    problems: dict[Path, str]  # agent / pipeline files that could not be read as YAML mappings, and why

    @property
    def file(self) -> Path:
        return self.root / PROJECT_FILE

    @property
    def name(self) -> str:
        return str(self.doc.get("name", ""))

    @property
    def context_section(self) -> Any:
        """`runtime.context:` as written (None when absent); validated by zymi_tui.context.knobs."""
        runtime = self.doc.get("runtime")
        return runtime.get("context") if isinstance(runtime, dict) else None

    def llm_setting(self, key: str) -> str | None:
        """`llm.<key>` as written (`model`, `provider`), when it is a string."""
        llm = self.doc.get("llm")
        value = llm.get(key) if isinstance(llm, dict) else None
        return value if isinstance(value, str) else None

    def store_setting(self) -> str | None:
        """`store:` with `${env.VAR}` resolved; None for the default store (absent, empty or `sqlite`)."""
        return store_setting(self.doc, self.file)

    def system_prompt(self, agent: str) -> str:
        return self.agents.get(agent, f"You are the '{agent}' agent.")

    def pipeline(self, name: str) -> PipelineSpec:
        """The pipeline `name`, whole: ProjectError with the reason when its file is missing or broken."""
        spec = self.pipelines.get(name)
        if spec is not None and spec.problem is None:
            return spec
        if spec is not None and spec.problem is not None:
            raise ProjectError(spec.problem)
        for path, problem in self.problems.items():
            if path.parent.name == "pipelines" and path.stem == name:
                raise ProjectError(problem)
        raise ProjectError(f"pipelines/{name}.yml not found in {self.root}")


def is_project(folder: Path) -> bool:
    return (folder / PROJECT_FILE).is_file()


def store_setting(doc: dict[str, Any], where: Path) -> str | None:
    value = doc.get("store")
    if not isinstance(value, str) or value.strip() in ("", "sqlite"):
        return None

    def env(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise ProjectError(f"{where.name} store: `${{env.{m.group(1)}}}` is not set in the environment")
        return os.environ[m.group(1)]

    return _ENV.sub(env, value.strip())


def read_project_doc(root: Path) -> dict[str, Any]:
    """`project.yml` of `root` as written; ProjectError when it is missing, unreadable or not a mapping."""
    path = root / PROJECT_FILE
    if not path.is_file():
        raise ProjectError(f"{root}: no project.yml there (pass --project DIR, the folder that holds it)")
    doc = parse_yaml(read_text(path), path)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ProjectError(f"invalid YAML in {path}: expected a mapping at the top level")
    return doc


def read_project(root: Path) -> Project:
    """Read the project at `root` (the folder holding project.yml)."""
    doc = read_project_doc(root)
    variables = (
        {str(k): str(v) for k, v in (doc.get("variables") or {}).items()}
        if isinstance(doc.get("variables"), dict)
        else {}
    )
    variables["project.name"] = str(doc.get("name", ""))
    if doc.get("version") is not None:
        variables["project.version"] = str(doc["version"])
    problems: dict[Path, str] = {}

    def docs(folder: str) -> list[tuple[Path, Any]]:
        out = []
        for path in yaml_files(root / folder):
            try:
                out.append((path, parse_yaml(resolve_full(read_text(path), str(path), variables, strict=False), path)))
            except ProjectError as e:
                problems[path] = e.message
        return out

    agents: dict[str, str] = {}
    agent_tools: dict[str, tuple[str, ...]] = {}
    for _, agent in docs("agents"):
        if isinstance(agent, dict) and "name" in agent:
            name = str(agent["name"])
            tools = agent.get("tools")
            agent_tools[name] = tuple(str(t) for t in tools) if isinstance(tools, list) else ()
            prompt = agent.get("system_prompt")
            agents[name] = str(prompt) if prompt is not None else f"You are the '{name}' agent."
    pipelines: dict[str, PipelineSpec] = {}
    for path, pipe in docs("pipelines"):
        spec = _pipeline(pipe, path, problems)
        if spec is not None:
            pipelines.setdefault(spec.name, spec)
    return Project(root, doc, agents, agent_tools, pipelines, problems)


def _what(s: dict[str, Any]) -> str:
    if "agent" in s:
        return f"agent: {s['agent']}"
    if "tool" in s:
        return f"tool: {s['tool']}"
    if "ask" in s:
        ask = s["ask"]
        return f"ask: {ask.get('channel', 'caller') if isinstance(ask, dict) else ask}"
    return "—"


def _pipeline(doc: Any, path: Path, problems: dict[Path, str]) -> PipelineSpec | None:
    if not isinstance(doc, dict):
        problems[path] = f"invalid YAML in {path}: expected a mapping at the top level"
        return None
    problem = None
    raw_steps = doc.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        problem = f"{path.name} has no `steps:` list"
        raw_steps = []
    steps: dict[str, StepSpec] = {}
    for s in raw_steps:
        if not isinstance(s, dict) or not isinstance(s.get("id"), str):
            problem = f"{path.name}: a step without an `id`"
            continue
        ctx = s.get("context") if isinstance(s.get("context"), dict) else {}
        deps = s.get("depends_on") or []
        if isinstance(deps, str):
            deps = [deps]
        sid = s["id"]
        steps.setdefault(
            sid,
            StepSpec(
                id=sid,
                agent=None if s.get("agent") is None else str(s["agent"]),
                task=None if s.get("task") is None else str(s["task"]),
                depends_on=tuple(str(d) for d in deps),
                fresh=str((ctx or {}).get("mode", "inherit")) == "fresh",
                what=_what(s),
            ),
        )
    optional = tuple(
        str(i["name"])
        for i in doc.get("inputs") or []
        if isinstance(i, dict) and "name" in i and not i.get("required", False)
    )
    name = str(doc.get("name", path.stem))
    levels = step_levels({sid: st.depends_on for sid, st in steps.items()}).of()
    return PipelineSpec(name, path, optional, steps, levels, problem)
