"""Load and validate a zymi project (docs/engine.md#project): project.yml, agents/, pipelines/, tools/, .env.

Every failure is a `ProjectError` whose one-line message names the file, the key and the rule,
worded as zymi words it where zymi has a message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from zymi_tui.context.knobs import section_knobs
from zymi_tui.engine.config import (
    AgentConfig,
    LlmConfig,
    PipelineConfig,
    ProjectConfig,
    StepConfig,
    ToolConfig,
    inline_llm,
)
from zymi_tui.engine.dag import plan_levels
from zymi_tui.engine.templating import STEP_REF
from zymi_tui.engine.when_expr import WhenError, parse_when
from zymi_tui.events.location import StoreLocation
from zymi_tui.project.errors import ProjectError
from zymi_tui.project.locate import project_store
from zymi_tui.project.reader import PROJECT_FILE
from zymi_tui.project.templating import resolve_env_only, resolve_full
from zymi_tui.project.validation import Refused, convert
from zymi_tui.project.yamlfile import parse_yaml, read_text, yaml_files

BUILTIN_TOOLS = ("execute_shell_command", "write_file", "read_file", "write_memory", "spawn_sub_agent")

M = TypeVar("M")


class Workspace(msgspec.Struct):
    root: Path
    project: ProjectConfig
    agents: dict[str, AgentConfig] = msgspec.field(default_factory=dict)
    pipelines: dict[str, PipelineConfig] = msgspec.field(default_factory=dict)
    tools: dict[str, ToolConfig] = msgspec.field(default_factory=dict)
    store_at: StoreLocation | None = None  # a store chosen by the caller (the one a dashboard shows)
    llm: LlmConfig | None = None  # project.yml's `llm:` when it is an inline mapping (`inline_llm`)

    @property
    def store(self) -> StoreLocation:
        """Where runs are recorded: `store_at` when set, else what project.yml's `store:` names, else
        `<root>/.zymi/events.db`."""
        return self.store_at or project_store(self.root)

    def pipeline(self, name: str) -> PipelineConfig:
        if name not in self.pipelines:
            available = ", ".join(sorted(self.pipelines)) or "(none)"
            raise ProjectError(f"pipeline '{name}' not found. Available: {available}")
        return self.pipelines[name]


def load_dotenv(paths: list[Path], environ: dict[str, str] | None = None) -> None:
    """`.env` files in order; a key already set is never overwritten; a malformed file is ignored."""
    env = os.environ if environ is None else environ
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            text = line.strip()
            if not text or text.startswith("#") or "=" not in text:
                continue
            key, _, value = text.removeprefix("export ").partition("=")
            key, value = key.strip(), value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            if key and key not in env:
                env[key] = value


def _model(cls: type[M], doc: Any, path: Path) -> M:
    if not isinstance(doc, dict):
        raise ProjectError(f"invalid YAML in {path}: expected a mapping at the top level")
    try:
        return convert(doc, cls)
    except Refused as e:
        raise ProjectError(f"invalid YAML in {path}: {e}") from None


STEP_KEYS_NULL_IS_ABSENT = ("agent", "task", "tool", "args", "ask", "channel", "when", "context")


def _steps_as_zymi_reads(pipeline_doc: dict[str, Any]) -> dict[str, Any]:
    """A pipeline document with the step keys zymi reads as absent when null (`task: null`) left out."""
    steps = pipeline_doc.get("steps")
    if not isinstance(steps, list):
        return pipeline_doc
    kept = [
        {k: v for k, v in s.items() if v is not None or k not in STEP_KEYS_NULL_IS_ABSENT} if isinstance(s, dict) else s
        for s in steps
    ]
    return {**pipeline_doc, "steps": kept}


def _step_kind_errors(pipeline_doc: dict[str, Any], path: Path) -> None:
    steps = pipeline_doc.get("steps")
    if not isinstance(steps, list):
        return
    for raw in steps:
        if not isinstance(raw, dict):
            continue
        sid = raw.get("id", "?")
        agentish = "agent" in raw or "task" in raw
        toolish = "tool" in raw or "args" in raw
        askish = "ask" in raw
        kinds = agentish + toolish + askish
        msg = None
        if kinds > 1:
            msg = f"step `{sid}`: specify exactly one of `agent:` + `task:`, `tool:`, or `ask:` (ADR-0024, ADR-0042)"
        elif kinds == 0:
            msg = f"step `{sid}`: must specify one of `agent:` + `task:`, `tool:`, or `ask:` (ADR-0024, ADR-0042)"
        elif agentish and "agent" not in raw:
            msg = f"step `{sid}`: `agent:` is required"
        elif agentish and "task" not in raw:
            msg = f"step `{sid}`: `task:` is required for agent steps"
        elif toolish and "tool" not in raw:
            msg = f"step `{sid}`: `tool:` is required for tool steps"
        if msg:
            raise ProjectError(f"invalid YAML in {path}: steps: {msg}")
    output = pipeline_doc.get("output")
    if output is not None:
        if not isinstance(output, dict):
            raise ProjectError(f"invalid YAML in {path}: `output:` must be a mapping")
        if "step" in output and "any_of" in output:
            raise ProjectError(
                f"invalid YAML in {path}: `output:` cannot specify both `step:` and `any_of:` (ADR-0029)"
            )
        for key in ("step", "any_of"):
            if key in output and output[key] is None:
                raise ProjectError(f"invalid YAML in {path}: output.{key}: expected a string, got null")
        if "step" not in output and "any_of" not in output:
            keys = ", ".join(str(k) for k in output)
            raise ProjectError(
                f"invalid YAML in {path}: `output:` must specify either `step:` or `any_of:`; found keys: [{keys}]"
            )


def find_root(directory: str | None) -> Path:
    """`--dir` if given, else the current folder (zymi's home-project fallback is not used)."""
    return Path(directory).expanduser().resolve() if directory else Path.cwd()


def load_workspace(root: Path, environ: Mapping[str, str] | None = None) -> Workspace:
    project_file = root / PROJECT_FILE
    if not project_file.is_file():
        raise ProjectError(f"no project.yml found in {root}. Run `zymi-tui init` first.")
    if environ is None:
        load_dotenv([root / ".env", Path.cwd() / ".env"])
        environ = os.environ
    text = resolve_env_only(read_text(project_file), str(project_file.resolve()), environ)
    ws = Workspace(root, _model(ProjectConfig, parse_yaml(text, project_file), project_file))
    try:
        ws.llm = inline_llm(ws.project)
    except Refused as e:
        raise ProjectError(f"invalid YAML in {project_file}: {e}") from None
    section_knobs(ws.project.runtime.context if ws.project.runtime else None, project_file)  # refused now, not mid-run
    variables = dict(ws.project.variables)
    variables["project.name"] = ws.project.name
    if ws.project.version is not None:
        variables["project.version"] = ws.project.version
    seen: dict[str, dict[str, Path]] = {"agent": {}, "pipeline": {}, "tool": {}}

    def docs(folder: str) -> list[tuple[Path, Any]]:
        out = []
        for path in yaml_files(root / folder):
            resolved = resolve_full(read_text(path), str(path.resolve()), variables, environ)
            out.append((path, parse_yaml(resolved, path)))
        return out

    def claim(kind: str, name: str, path: Path) -> None:
        if name in seen[kind]:
            raise ProjectError(f"duplicate {kind} name `{name}`: defined in both {seen[kind][name]} and {path}")
        seen[kind][name] = path

    for path, doc in docs("agents"):
        agent = _model(AgentConfig, doc, path)
        claim("agent", agent.name, path)
        ws.agents[agent.name] = agent
    for path, doc in docs("pipelines"):
        if isinstance(doc, dict):
            doc = _steps_as_zymi_reads(doc)
            _step_kind_errors(doc, path)
        pipeline = _model(PipelineConfig, doc, path)
        claim("pipeline", pipeline.name, path)
        ws.pipelines[pipeline.name] = pipeline
    for path, doc in docs("tools"):
        tool = _model(ToolConfig, doc, path)
        if tool.name in BUILTIN_TOOLS:
            raise ProjectError(
                f"tool catalog error: declarative tool '{tool.name}' collides with built-in tool of the same name"
            )
        claim("tool", tool.name, path)
        ws.tools[tool.name] = tool
    validate(ws)
    return ws


def _fail(path: str, message: str) -> ProjectError:
    return ProjectError(f"validation error in {path}: {message}")


def _check_refs(step: StepConfig, text: str, where: str, path: str, ids: set[str]) -> None:
    for ref in STEP_REF.findall(text):
        if ref not in ids:
            raise _fail(path, f"{where} `{step.id}` references unknown step `${{steps.{ref}.output}}`")
        if ref not in step.depends_on:
            raise _fail(
                path,
                f"{where} `{step.id}` references `${{steps.{ref}.output}}` in args but `{ref}` is not in depends_on",
            )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def validate(ws: Workspace) -> None:
    """zymi's cross-file checks (src/config/validate.rs), with its messages."""
    known_tools = set(BUILTIN_TOOLS) | set(ws.tools)
    for agent in ws.agents.values():
        for tool in agent.tools:
            if tool not in known_tools:
                raise _fail(f"agents/{agent.name}.yml", f"agent `{agent.name}` references unknown tool `{tool}`")
    for pipeline in ws.pipelines.values():
        path = f"pipelines/{pipeline.name}.yml"
        ids = {s.id for s in pipeline.steps}
        for step in pipeline.steps:
            if step.kind == "agent" and step.agent not in ws.agents:
                raise _fail(path, f"step `{step.id}` references unknown agent `{step.agent}`")
            if step.kind == "tool":
                if step.tool not in known_tools:
                    raise _fail(path, f"tool step `{step.id}` references unknown tool `{step.tool}`")
                for text in _strings(step.args):
                    _check_refs(step, text, "tool step", path, ids)
            if step.kind == "ask" and step.ask is not None:
                for ref in STEP_REF.findall(step.ask):
                    if ref not in ids:
                        raise _fail(path, f"ask step `{step.id}` references unknown step `${{steps.{ref}.output}}`")
                    if ref not in step.depends_on:
                        raise _fail(
                            path,
                            f"ask step `{step.id}` references `${{steps.{ref}.output}}` in its prompt "
                            f"but `{ref}` is not in depends_on",
                        )
            for dep in step.depends_on:
                if dep not in ids:
                    raise _fail(path, f"step `{step.id}` depends on unknown step `{dep}`")
            if step.when is not None:
                if not step.depends_on:
                    raise _fail(
                        path,
                        f"step `{step.id}` has `when:` but no `depends_on` — nothing has happened yet to branch on",
                    )
                try:
                    parse_when(step.when)
                except WhenError as e:
                    raise _fail(path, f"step `{step.id}` has invalid `when:` expression: {e}") from None
                for ref in STEP_REF.findall(step.when):
                    if ref not in ids:
                        raise _fail(path, f"step `{step.id}` `when:` references unknown step `${{steps.{ref}.output}}`")
                    if ref not in step.depends_on:
                        raise _fail(
                            path,
                            f"step `{step.id}` `when:` references `${{steps.{ref}.output}}` but `{ref}` is not in "
                            "depends_on — would race against an unrelated branch",
                        )
        out = pipeline.output
        if out is not None:
            if out.step is not None and out.step not in ids:
                raise _fail(path, f"output references unknown step `{out.step}`")
            if out.any_of is not None:
                if not out.any_of:
                    raise _fail(path, "output `any_of:` must list at least one step")
                for sid in out.any_of:
                    if sid not in ids:
                        raise _fail(path, f"output `any_of:` references unknown step `{sid}`")
                    if out.any_of.count(sid) > 1:
                        raise _fail(path, f"output `any_of:` lists `{sid}` more than once")
        plan_levels(pipeline)
