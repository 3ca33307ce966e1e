"""The schema of a zymi project's YAML files (docs/engine.md#project-file), as records (`zymi_tui.record`):
a project whose values have their exact types is made without pydantic, which is loaded only for a
project it has to coerce or refuse (and words what it refuses).

Unknown keys are ignored everywhere, as zymi does. Fields zymi parses but never uses are kept
so that a project written for zymi loads unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

from zymi_tui.record import Record, field


class LlmConfig(Record):
    provider: str
    model: str = ""
    base_url: str | None = None
    api_key: str | None = None
    stream: bool = False


class Defaults(Record):
    timeout_secs: int = field(default=30, ge=0)
    max_iterations: int = field(default=10, ge=0)
    max_tokens: int = field(default=4096, ge=0)


class PolicyConfig(Record):
    enabled: bool = False
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    require_approval: list[str] = field(default_factory=list)


class FileWriteContract(Record):
    allowed_dirs: list[str] = field(default_factory=list)
    deny_patterns: list[str] = field(default_factory=list)


class Contracts(Record):
    file_write: FileWriteContract = field(default_factory=FileWriteContract)


class ShellRuntime(Record):
    idle_timeout_seconds: int = field(default=600, ge=0)
    max_sessions: int = field(default=32, ge=0)
    shell_path: str = "/bin/bash"
    interactive: bool = False
    sandbox: bool = True  # zymi-tui's: run the shell in bubblewrap where it works (engine/sandbox.py)
    network: bool = False  # zymi-tui's: the sandboxed shell may reach the network


class RuntimeConfig(Record):
    shell: ShellRuntime = field(default_factory=ShellRuntime)
    context: dict[str, Any] | None = None


class ProjectConfig(Record):
    name: str
    schema_version: str | None = None
    version: str | None = None
    variables: dict[str, str] = field(default_factory=dict)
    llm: LlmConfig | str | dict[str, Any] | None = None
    defaults: Defaults = field(default_factory=Defaults)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    contracts: Contracts = field(default_factory=Contracts)
    runtime: RuntimeConfig | None = None
    connectors: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    default_approval_channel: str | None = None
    store: str | None = None


class AgentConfig(Record):
    name: str
    description: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    tools: list[str] = field(default_factory=list)
    max_iterations: int | None = field(default=None, ge=0)
    max_tokens: int | None = field(default=None, ge=0)
    timeout_secs: int | None = field(default=None, ge=0)
    policy: PolicyConfig | None = None


class PipelineInput(Record):
    name: str
    type: Literal["string", "integer", "number", "boolean", "object", "array"] = "string"
    required: bool = False
    description: str | None = None


class StepContext(Record):
    mode: Literal["inherit", "fresh"] = "inherit"


class StepConfig(Record):
    id: str
    agent: str | None = None
    task: str | None = None
    tool: str | None = None
    args: Any = None
    ask: str | None = None
    channel: str | None = None
    depends_on: list[str] = field(default_factory=list)
    when: str | None = None
    context: StepContext = field(default_factory=StepContext)

    @property
    def kind(self) -> Literal["agent", "tool", "ask"]:
        if self.ask is not None:
            return "ask"
        return "tool" if self.tool is not None else "agent"


class OutputConfig(Record):
    step: str | None = None
    any_of: list[str] | None = None


class PipelineConfig(Record):
    name: str
    description: str | None = None
    inputs: list[PipelineInput] = field(default_factory=list)
    steps: list[StepConfig]
    output: OutputConfig | None = None
    approval_channel: str | None = None

    def step(self, step_id: str) -> StepConfig | None:
        return next((s for s in self.steps if s.id == step_id), None)


class HttpImpl(Record):
    kind: Literal["http"]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body_template: str | None = None


class ShellImpl(Record):
    kind: Literal["shell"]
    command_template: str
    timeout_secs: int = field(default=30, ge=0)


class ToolConfig(Record):
    name: str
    description: str
    parameters: Any
    implementation: HttpImpl | ShellImpl = field(discriminator="kind")
    requires_approval: bool | None = None
    no_resume: bool | None = None
