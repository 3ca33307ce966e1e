"""The schema of a zymi project's YAML files (docs/engine.md#project-file), as pydantic models.

Unknown keys are ignored everywhere, as zymi does. Fields zymi parses but never uses are kept
so that a project written for zymi loads unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Loose(BaseModel):
    # a project whose values have their exact types is made without the validator (loader, engine.exact):
    # the schemas are built only for a project pydantic has to coerce or refuse
    model_config = ConfigDict(extra="ignore", defer_build=True)


class LlmConfig(_Loose):
    provider: str
    model: str = ""
    base_url: str | None = None
    api_key: str | None = None
    stream: bool = False


class Defaults(_Loose):
    timeout_secs: int = Field(30, ge=0)
    max_iterations: int = Field(10, ge=0)
    max_tokens: int = Field(4096, ge=0)


class PolicyConfig(_Loose):
    enabled: bool = False
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    require_approval: list[str] = Field(default_factory=list)


class FileWriteContract(_Loose):
    allowed_dirs: list[str] = Field(default_factory=list)
    deny_patterns: list[str] = Field(default_factory=list)


class Contracts(_Loose):
    file_write: FileWriteContract = Field(default_factory=FileWriteContract)


class ShellRuntime(_Loose):
    idle_timeout_seconds: int = Field(600, ge=0)
    max_sessions: int = Field(32, ge=0)
    shell_path: str = "/bin/bash"
    interactive: bool = False


class RuntimeConfig(_Loose):
    shell: ShellRuntime = Field(default_factory=ShellRuntime)
    context: dict[str, Any] | None = None


class ProjectConfig(_Loose):
    name: str
    schema_version: str | None = None
    version: str | None = None
    variables: dict[str, str] = Field(default_factory=dict)
    llm: LlmConfig | str | dict[str, Any] | None = None
    defaults: Defaults = Field(default_factory=Defaults)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    contracts: Contracts = Field(default_factory=Contracts)
    runtime: RuntimeConfig | None = None
    connectors: list[dict[str, Any]] = Field(default_factory=list)
    outputs: list[dict[str, Any]] = Field(default_factory=list)
    approvals: list[dict[str, Any]] = Field(default_factory=list)
    default_approval_channel: str | None = None
    store: str | None = None


class AgentConfig(_Loose):
    name: str
    description: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    tools: list[str] = Field(default_factory=list)
    max_iterations: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    timeout_secs: int | None = Field(None, ge=0)
    policy: PolicyConfig | None = None


class PipelineInput(_Loose):
    name: str
    type: Literal["string", "integer", "number", "boolean", "object", "array"] = "string"
    required: bool = False
    description: str | None = None


class StepContext(_Loose):
    mode: Literal["inherit", "fresh"] = "inherit"


class StepConfig(_Loose):
    id: str
    agent: str | None = None
    task: str | None = None
    tool: str | None = None
    args: Any = None
    ask: str | None = None
    channel: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    when: str | None = None
    context: StepContext = Field(default_factory=StepContext)

    @property
    def kind(self) -> Literal["agent", "tool", "ask"]:
        if self.ask is not None:
            return "ask"
        return "tool" if self.tool is not None else "agent"


class OutputConfig(_Loose):
    step: str | None = None
    any_of: list[str] | None = None


class PipelineConfig(_Loose):
    name: str
    description: str | None = None
    inputs: list[PipelineInput] = Field(default_factory=list)
    steps: list[StepConfig]
    output: OutputConfig | None = None
    approval_channel: str | None = None

    def step(self, step_id: str) -> StepConfig | None:
        return next((s for s in self.steps if s.id == step_id), None)


class HttpImpl(_Loose):
    kind: Literal["http"]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    body_template: str | None = None


class ShellImpl(_Loose):
    kind: Literal["shell"]
    command_template: str
    timeout_secs: int = Field(30, ge=0)


class ToolConfig(_Loose):
    name: str
    description: str
    parameters: Any
    implementation: HttpImpl | ShellImpl = Field(discriminator="kind")
    requires_approval: bool | None = None
    no_resume: bool | None = None
